/* pass/fold_scalars.c — being written (issue 3). */
