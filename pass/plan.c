/* pass/plan.c — being written (issue 3). */
