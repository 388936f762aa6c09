/* pass/memplan.c — being written (issue 3). */
