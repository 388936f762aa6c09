/* pass/fold_bn.c — being written (issue 3). */
