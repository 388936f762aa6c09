/* pass/compile.c — being written (issue 3). */
