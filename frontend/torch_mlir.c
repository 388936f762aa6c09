/* frontend/torch_mlir.c — placeholder; being written. */
