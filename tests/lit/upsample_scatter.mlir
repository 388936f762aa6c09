// The .pt2 frontend on F.interpolate, slice/select_scatter and torch.roll
// (tests/fixtures, recorded by scripts/make_fixtures.py): every upsample
// overload becomes one kf.upsample whose attributes carry what ATen's
// kernels read. A scale factor stays next to the size it gives (1.7 of 5
// is 8, but the source coordinates step by 1/1.7, not 5/8), align_corners
// is kept, bicubic is mode "cubic". select_scatter is a slice_scatter of
// one (negative indices wrapped), slice_scatter keeps its step and an
// integer source (converted by the op), roll is a kf.cat of two slices per
// dim (the flattened tensor when no dims are given).
//
// RUN: %kfuse opt %fixtures/upsample.default.pt2 | FileCheck %s --check-prefix=UP
// RUN: %kfuse opt %fixtures/upsample.core.pt2 | FileCheck %s --check-prefix=UP
// RUN: %kfuse opt %fixtures/upsample_modes.default.pt2 | FileCheck %s --check-prefix=MODES
// RUN: %kfuse opt %fixtures/scatters.default.pt2 | FileCheck %s --check-prefix=SCAT

// UP: "kf.upsample"(%x) {align_corners = false, mode = "linear", scales = array<f64: 0.0, 0.0>, size = array<i64: 9, 4>} : (tensor<2x3x5x7xf32>) -> tensor<2x3x9x4xf32>
// UP: "kf.upsample"(%x) {align_corners = true, mode = "linear", scales = array<f64: 0.0, 0.0>, size = array<i64: 9, 13>}
// UP: "kf.upsample"(%x) {align_corners = false, mode = "linear", scales = array<f64: 1.7, 1.7>, size = array<i64: 8, 11>}
// UP: "kf.upsample"(%x) {align_corners = true, mode = "linear", scales = array<f64: 2.0, 0.6>, size = array<i64: 10, 4>}
// UP: "kf.upsample"(%x) {align_corners = false, mode = "nearest", scales = array<f64: 0.6, 2.5>, size = array<i64: 3, 17>}

// MODES: "kf.upsample"(%x2) {align_corners = false, mode = "cubic", scales = array<f64: 1.7, 1.7>, size = array<i64: 8, 11>}
// MODES: "kf.upsample"(%x2) {align_corners = true, mode = "cubic", scales = array<f64: 1.7, 1.7>, size = array<i64: 8, 11>}
// MODES: "kf.upsample"(%x2) {align_corners = false, mode = "nearest-exact", scales = array<f64: 1.7, 1.7>, size = array<i64: 8, 11>}
// MODES: "kf.upsample"(%x1) {align_corners = false, mode = "linear", scales = array<f64: 1.5>, size = array<i64: 7>} : (tensor<2x3x5xf32>) -> tensor<2x3x7xf32>
// MODES: "kf.upsample"(%x3) {align_corners = true, mode = "linear", scales = array<f64: 0.0, 0.0, 0.0>, size = array<i64: 3, 5, 9>} : (tensor<1x2x2x3x4xf32>) -> tensor<1x2x3x5x9xf32>

// SCAT: "kf.slice_scatter"(%x, %mul) {dim = 1 : i64, end = 5 : i64, start = 1 : i64, step = 2 : i64} : (tensor<2x6x7xf32>, tensor<2x2x7xf32>) -> tensor<2x6x7xf32>
// SCAT: "kf.slice_scatter"(%x, %z) {dim = 2 : i64, end = 7 : i64, start = 4 : i64, step = 1 : i64}
// SCAT: "kf.slice_scatter"(%x, %i) {{.*}} : (tensor<2x6x7xf32>, tensor<2x2x7xi64>) -> tensor<2x6x7xf32>
// SCAT: %select_scatter.0 = "kf.reshape"(%select) : (tensor<2x6xf32, #kf.strided<[18, 3]>>) -> tensor<2x6x1xf32
// SCAT: "kf.slice_scatter"(%x, %select_scatter.0) {dim = 2 : i64, end = 7 : i64, start = 6 : i64, step = 1 : i64}
// SCAT: %roll.0 = "kf.slice"(%x) {dim = 1 : i64, end = 6 : i64, start = 5 : i64, step = 1 : i64}
// SCAT: %roll.1 = "kf.slice"(%x) {dim = 1 : i64, end = 5 : i64, start = 0 : i64, step = 1 : i64}
// SCAT: %roll.2 = "kf.cat"(%roll.0, %roll.1) {dim = 1 : i64}
// SCAT: %roll = "kf.cat"(%roll.3, %roll.4) {dim = 2 : i64}
// SCAT: %roll_1.0 = "kf.reshape"(%x) : (tensor<2x6x7xf32>) -> tensor<84xf32>
// SCAT: %roll_1 = "kf.reshape"(%roll_1.3) : (tensor<84xf32>) -> tensor<2x6x7xf32>
