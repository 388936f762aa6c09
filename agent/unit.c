/* agent/unit.c — being written (issue 3). */
