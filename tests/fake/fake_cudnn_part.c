/* tests/fake/fake_cudnn_part.c — stands for a cuDNN 9 sub-library
 * (libcudnn_graph.so.9, ...) in unit.test_create: whether it was loaded, and
 * whether into the global scope, shows through its one symbol. */
__attribute__((visibility("default"))) int fake_cudnn_part_marker = 1;
