// The .pt2 frontend: what real torch.export archives (tests/fixtures, made
// by scripts/make_fixtures.py) lower to. Both IR flavours of a model give
// the same kf ops; defaults left out of the archive are filled in; weights
// become kf.param with their state-dict names.
//
// RUN: %kfuse opt %fixtures/mlp.core.pt2 | FileCheck %s --check-prefix=MLP
// RUN: %kfuse opt %fixtures/mlp.default.pt2 | FileCheck %s --check-prefix=MLP
// RUN: %kfuse opt %fixtures/vgg_block.default.pt2 | FileCheck %s --check-prefix=VGG
// RUN: %kfuse opt %fixtures/vgg_block.core.pt2 | FileCheck %s --check-prefix=VGG
// RUN: %kfuse opt %fixtures/mobilenetv2_block.core.pt2 | FileCheck %s --check-prefix=MBV2
// RUN: %kfuse opt %fixtures/gpt_block.core.pt2 | FileCheck %s --check-prefix=GPT
// RUN: %kfuse opt %fixtures/norms.core.pt2 | FileCheck %s --check-prefix=NORMS
// RUN: %kfuse info --no-ir %fixtures/resnet_block.core.pt2 | FileCheck %s --check-prefix=RESNET

// MLP: function_type = (tensor<4x16xf32>) -> (tensor<4x10xf32>)
// MLP: "kf.param"() {fqn = "fc1.weight", kind = "parameter"} : () -> tensor<32x16xf32>
// MLP: "kf.permute"
// MLP: "kf.addmm"({{.*}}) {alpha = 1 : i64, beta = 1 : i64} : (tensor<32xf32>, tensor<4x16xf32>, tensor<16x32xf32, #kf.strided<[1, 16]>>) -> tensor<4x32xf32>
// MLP: "kf.relu"
// MLP: "kf.gelu"({{.*}}) {approximate = "none"}
// MLP: "kf.log_softmax"({{.*}}) {dim = 1 : i64} : (tensor<4x10xf32>) -> tensor<4x10xf32>

// 15x15 pooled 2x2 with ceil_mode: 8x8, not 7x7
// VGG: "kf.conv"(%x, %p_c1_weight, %p_c1_bias) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false}
// VGG: "kf.max_pool"({{.*}}) {ceil_mode = true, dilation = array<i64: 1, 1>, kernel = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x8x15x15xf32>) -> (tensor<2x8x8x8xf32>, tensor<2x8x8x8xi64>)

// depthwise convolution and relu6
// MBV2: "kf.batch_norm"({{.*}}running_mean{{.*}}running_var) {eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}
// MBV2: "kf.hardtanh"({{.*}}) {max_val = 6.0 : f64, min_val = 0.0 : f64}
// MBV2: "kf.conv"({{.*}}) {{{.*}}groups = 24 : i64{{.*}}} : (tensor<2x24x12x12xf32>, tensor<24x1x3x3xf32>) -> tensor<2x24x12x12xf32>

// GPT: "kf.arange"() {end = 8 : i64, start = 0 : i64, step = 1 : i64} : () -> tensor<8xi64>
// GPT: "kf.embedding"({{.*}}, %idx) : (tensor<64x32xf32>, tensor<2x8xi64>) -> tensor<2x8x32xf32>
// GPT: "kf.sdpa"({{.*}}) {enable_gqa = false, is_causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>}
// GPT: "kf.layer_norm"

// batch norm with running statistics, and without (track_running_stats=False)
// NORMS: "kf.batch_norm"(%x, %p_bn_weight, %p_bn_bias, %b_bn_running_mean, %b_bn_running_var)
// NORMS: "kf.batch_norm"(%x, %p_bn_nostats_weight, %p_bn_nostats_bias) {eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}

// RESNET: // inputs:
// RESNET-NEXT: //   x {{ *}}tensor<2x3x16x16xf32>
// RESNET: // outputs:
// RESNET-NEXT: //   #0 {{ *}}tensor<2x10xf32>
// RESNET-DAG: //   conv {{ *}}6
// RESNET-DAG: //   batch_norm {{ *}}6
// RESNET-DAG: //   max_pool {{ *}}1
// RESNET: // weights:
// RESNET-NEXT: // activations:
