/* agent/nvrtc.c — being written (issue 3). */
