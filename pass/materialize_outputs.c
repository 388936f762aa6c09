/* pass/materialize_outputs.c — being written (issue 3). */
