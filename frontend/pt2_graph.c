/* frontend/pt2_graph.c — placeholder; being written. */
