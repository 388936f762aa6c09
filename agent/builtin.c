/* agent/builtin.c — being written (issue 3). */
