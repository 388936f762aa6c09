/* pass/partition.c — being written (issue 3). */
