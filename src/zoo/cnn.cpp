// Image classifiers in ggml's style (NCHW stored as [W, H, C, N], f16 kernels, f32
// activations), batch norm folded into a per-channel MUL + ADD (scale and shift [1, 1, C, 1]):
//  - ResNet-50 v1.5 at 224x224: conv as ggml_conv_2d (IM2COL + MUL_MAT + permute/cont), ReLU,
//    3x3 max pool, bottleneck blocks with the stride on the 3x3 conv and a projection
//    shortcut at the start of each stage, global average pool, fully connected head.
//  - MobileNetV2 at 224x224: direct convolutions (CONV_2D, depthwise CONV_2D_DW), ReLU6 as
//    CLAMP (a view in ggml), inverted residual blocks with linear bottlenecks.
#include <string>

#include "builder.hpp"

namespace galloc::zoo {

namespace {

using T = TensorId;

class Cnn {
 public:
  Cnn(bool direct, BuilderMirror* mirror) : direct_(direct), b_(mirror) {}

  GraphBuilder& b() { return b_; }

  // conv (no bias) + folded batch norm
  T conv_bn(T x, const std::string& prefix, std::int64_t in, std::int64_t out, int k, int stride, int pad) {
    const T w = b_.weight(prefix + ".weight", DataType::F16, {k, k, in, out});
    const T y =
        direct_ ? b_.conv_2d_direct(w, x, stride, stride, pad, pad) : b_.conv_2d(w, x, stride, stride, pad, pad);
    return batch_norm(y, prefix + ".bn", out);
  }

  // depthwise conv + folded batch norm
  T dwconv_bn(T x, const std::string& prefix, std::int64_t channels, int stride) {
    const T w = b_.weight(prefix + ".weight", DataType::F16, {3, 3, 1, channels});
    const T y = b_.conv_2d_dw_direct(w, x, stride, stride, 1, 1);
    return batch_norm(y, prefix + ".bn", channels);
  }

  T batch_norm(T x, const std::string& prefix, std::int64_t channels) {
    const T scale = b_.weight(prefix + ".scale", DataType::F32, {1, 1, channels, 1});
    const T shift = b_.weight(prefix + ".shift", DataType::F32, {1, 1, channels, 1});
    return b_.add(b_.mul(x, scale), shift);
  }

  // global average pool + fully connected classifier
  T head(T x, std::int64_t channels, std::int64_t classes) {
    const int side = static_cast<int>(b_.ne(x, 0));
    T y = b_.pool_2d(x, PoolOp::kAvg, side, side, side, side, 0, 0);  // [1, 1, C, N]
    y = b_.reshape_2d(y, channels, b_.ne(y, 3));
    const T w = b_.weight("fc.weight", DataType::F16, {channels, classes});
    const T bias = b_.weight("fc.bias", DataType::F32, {classes});
    y = b_.add(b_.mul_mat(w, y), bias);
    y = b_.name(y, "logits");
    b_.set_output(y);
    b_.expand(y);
    return y;
  }

 private:
  bool direct_;
  GraphBuilder b_;
};

struct ResNetConfig {
  std::int64_t image;
  std::int64_t base_width;
  std::int64_t blocks[4];
  std::int64_t classes;
};

constexpr ResNetConfig kResNet50{224, 64, {3, 4, 6, 3}, 1000};

Result<Graph> build_resnet(ResNetConfig c, const Scaler& s, BuilderMirror* mirror) {
  if (!s.full()) {
    c.image = s.width(c.image, 32);  // five stride-2 reductions
    c.base_width = s.width(c.base_width, 8);
    for (std::int64_t& n : c.blocks) n = s.count(n);
    c.classes = s.count(c.classes);
  }
  Cnn net(false, mirror);
  GraphBuilder& b = net.b();
  const T image = b.input("image", DataType::F32, {c.image, c.image, 3, 1});
  T x = net.conv_bn(image, "conv1", 3, c.base_width, 7, 2, 3);
  x = b.relu(x);
  x = b.pool_2d(x, PoolOp::kMax, 3, 3, 2, 2, 1, 1);
  std::int64_t in = c.base_width;
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t width = c.base_width << stage;
    const std::int64_t out = 4 * width;
    for (std::int64_t i = 0; i < c.blocks[stage]; ++i) {
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      const int stride = (i == 0 && stage > 0) ? 2 : 1;
      T h = b.relu(net.conv_bn(x, p + ".conv1", in, width, 1, 1, 0));
      h = b.relu(net.conv_bn(h, p + ".conv2", width, width, 3, stride, 1));
      h = net.conv_bn(h, p + ".conv3", width, out, 1, 1, 0);
      const T shortcut = i == 0 ? net.conv_bn(x, p + ".downsample", in, out, 1, stride, 0) : x;
      x = b.relu(b.add(h, shortcut));
      in = out;
    }
  }
  net.head(x, in, c.classes);
  return b.finish();
}

struct MobileNetConfig {
  std::int64_t image;
  std::int64_t classes;
};

Result<Graph> build_mobilenet_v2(MobileNetConfig c, const Scaler& s, BuilderMirror* mirror) {
  // (expansion t, output channels c, repeats n, first stride s)
  struct Stage {
    std::int64_t t, c, n;
    int s;
  };
  constexpr Stage kStages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                               {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  auto ch = [&](std::int64_t n) { return s.width(n, 8); };
  if (!s.full()) {
    c.image = s.width(c.image, 32);
    c.classes = s.count(c.classes);
  }
  Cnn net(true, mirror);
  GraphBuilder& b = net.b();
  const T image = b.input("image", DataType::F32, {c.image, c.image, 3, 1});
  std::int64_t in = ch(32);
  T x = b.clamp(net.conv_bn(image, "features.0", 3, in, 3, 2, 1));
  int block = 1;
  for (const Stage& stage : kStages) {
    const std::int64_t out = ch(stage.c);
    const std::int64_t repeats = s.count(stage.n);
    for (std::int64_t i = 0; i < repeats; ++i) {
      const std::string p = "features." + std::to_string(block++);
      const int stride = i == 0 ? stage.s : 1;
      const std::int64_t hidden = in * stage.t;
      T h = x;
      if (stage.t != 1) h = b.clamp(net.conv_bn(h, p + ".expand", in, hidden, 1, 1, 0));
      h = b.clamp(net.dwconv_bn(h, p + ".dw", hidden, stride));
      h = net.conv_bn(h, p + ".project", hidden, out, 1, 1, 0);
      if (stride == 1 && in == out) h = b.add(h, x);
      x = h;
      in = out;
    }
  }
  const std::int64_t last = s.full() ? 1280 : s.width(1280, 8);
  x = b.clamp(net.conv_bn(x, "features." + std::to_string(block), in, last, 1, 1, 0));
  net.head(x, last, c.classes);
  return b.finish();
}

}  // namespace

void add_cnn_recipes(std::vector<Recipe>& out) {
  out.push_back({"cnn-resnet50",
                 "ResNet-50 v1.5 at 224x224 (stages 64/128/256/512 x4, 3-4-6-3 bottlenecks, 1000 classes): "
                 "conv as IM2COL + MUL_MAT, batch norm folded as MUL + ADD, ReLU, max/avg POOL_2D, residual adds",
                 [](const Scaler& s, BuilderMirror* m) { return build_resnet(kResNet50, s, m); }});
  out.push_back({"cnn-mobilenetv2",
                 "MobileNetV2 1.0 at 224x224 (17 inverted residual blocks, 1000 classes): direct CONV_2D and "
                 "depthwise CONV_2D_DW, batch norm folded as MUL + ADD, ReLU6 as CLAMP views, residual adds",
                 [](const Scaler& s, BuilderMirror* m) {
                   return build_mobilenet_v2({224, 1000}, s, m);
                 }});
}

}  // namespace galloc::zoo
