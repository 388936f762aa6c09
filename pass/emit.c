/* pass/emit.c — being written (issue 3). */
