// Vision transformers as the ggml image encoders build them (clip.cpp / mtmd's CLIP graph,
// and the ViT classifiers ported to ggml): a patch embedding conv (IM2COL + MUL_MAT), the
// class token concatenated in front, learned position embeddings, pre-norm encoder layers
// whose attention reshapes heads with cont(permute) copies, and a GELU MLP.
//  - ViT-B/16 at 224: 196 patches + 1 class token, 768 wide, 12 layers, 12 heads, classifier.
//  - CLIP ViT-L/14 at 336 (the LLaVA 1.5 image encoder): 576 + 1 tokens, 1024 wide, 24 layers,
//    16 heads, pre-layernorm, features of the penultimate layer (no head).
#include <algorithm>
#include <string>

#include "builder.hpp"

namespace galloc::zoo {

namespace {

using T = TensorId;

struct VitConfig {
  std::int64_t image;
  std::int64_t patch;
  std::int64_t hidden;
  std::int64_t n_head;
  std::int64_t n_layer;
  std::int64_t n_ff;
  std::int64_t classes;  // 0: no classifier, output the features of layer n_layer - 1 (CLIP)
  bool clip;             // pre-layernorm, quick GELU, skip the last layer
};

constexpr VitConfig kVitB16{224, 16, 768, 12, 12, 3072, 1000, false};
constexpr VitConfig kClipL14{336, 14, 1024, 16, 24, 4096, 0, true};

VitConfig scaled(VitConfig c, const Scaler& s) {
  if (s.full()) return c;
  const std::int64_t head_dim = c.hidden / c.n_head;
  c.image = s.width(c.image, c.patch);
  c.n_head = s.count(c.n_head);
  c.hidden = c.n_head * s.width(head_dim, 8);
  c.n_layer = std::max<std::int64_t>(c.clip ? 2 : 1, s.count(c.n_layer));
  c.n_ff = s.width(c.n_ff, 8);
  if (c.classes > 0) c.classes = s.count(c.classes);
  return c;
}

Result<Graph> build_vit(const VitConfig& c, BuilderMirror* mirror) {
  GraphBuilder b(mirror);
  const std::int64_t side = c.image / c.patch;
  const std::int64_t n_patches = side * side;
  const std::int64_t n_pos = n_patches + 1;
  const std::int64_t hidden = c.hidden;
  const std::int64_t n_head = c.n_head;
  const std::int64_t d_head = hidden / n_head;

  auto layer_norm = [&](T x, const std::string& prefix) {
    const T w = b.weight(prefix + ".weight", DataType::F32, {hidden});
    const T bias = b.weight(prefix + ".bias", DataType::F32, {hidden});
    return b.add(b.mul(b.norm(x), w), bias);
  };
  auto linear = [&](T x, const std::string& prefix, std::int64_t n_in, std::int64_t n_out) {
    const T w = b.weight(prefix + ".weight", DataType::F16, {n_in, n_out});
    const T y = b.mul_mat(w, x);
    return b.add(y, b.weight(prefix + ".bias", DataType::F32, {n_out}));
  };

  const T image = b.input("image", DataType::F32, {c.image, c.image, 3, 1});
  const T patch_w = b.weight("patch_embd.weight", DataType::F16, {c.patch, c.patch, 3, hidden});
  T inp = b.conv_2d(patch_w, image, static_cast<int>(c.patch), static_cast<int>(c.patch), 0, 0);
  const T patch_b = b.weight("patch_embd.bias", DataType::F32, {hidden});
  inp = b.add(inp, b.reshape_4d(patch_b, 1, 1, hidden, 1));
  inp = b.reshape_3d(inp, n_patches, hidden, 1);
  inp = b.cont(b.permute(inp, 1, 0, 2, 3));  // [hidden, n_patches, 1]
  const T class_embd = b.weight("class_embd", DataType::F32, {hidden, 1, 1});
  T embeddings = b.concat(class_embd, inp, 1);  // [hidden, n_pos, 1]
  embeddings = b.add(embeddings, b.weight("position_embd.weight", DataType::F32, {hidden, n_pos}));
  if (c.clip) embeddings = layer_norm(embeddings, "pre_ln");

  const std::int64_t n_run = c.clip ? c.n_layer - 1 : c.n_layer;  // CLIP: penultimate layer features
  for (std::int64_t il = 0; il < n_run; ++il) {
    const std::string p = "blk." + std::to_string(il);
    T cur = layer_norm(embeddings, p + ".ln1");
    T Q = linear(cur, p + ".attn_q", hidden, hidden);
    Q = b.scale_inplace(Q);
    Q = b.reshape_4d(Q, d_head, n_head, n_pos, 1);
    Q = b.cont(b.permute(Q, 0, 2, 1, 3));
    Q = b.reshape_3d(Q, d_head, n_pos, n_head);
    T K = linear(cur, p + ".attn_k", hidden, hidden);
    K = b.reshape_4d(K, d_head, n_head, n_pos, 1);
    K = b.cont(b.permute(K, 0, 2, 1, 3));
    K = b.reshape_3d(K, d_head, n_pos, n_head);
    T V = linear(cur, p + ".attn_v", hidden, hidden);
    V = b.reshape_4d(V, d_head, n_head, n_pos, 1);
    V = b.cont(b.permute(V, 1, 2, 0, 3));
    V = b.reshape_3d(V, n_pos, d_head, n_head);
    T KQ = b.mul_mat(K, Q);
    KQ = b.soft_max_inplace(KQ);
    T KQV = b.mul_mat(V, KQ);
    KQV = b.reshape_4d(KQV, d_head, n_pos, n_head, 1);
    KQV = b.permute(KQV, 0, 2, 1, 3);
    cur = b.cont_3d(KQV, hidden, n_pos, 1);
    cur = linear(cur, p + ".attn_out", hidden, hidden);
    cur = b.add(cur, embeddings);  // residual
    embeddings = cur;
    cur = layer_norm(cur, p + ".ln2");
    cur = linear(cur, p + ".ffn_up", hidden, c.n_ff);
    cur = b.gelu(cur);  // CLIP's quick GELU is another UNARY kind
    cur = linear(cur, p + ".ffn_down", c.n_ff, hidden);
    embeddings = b.add(embeddings, cur);
  }

  T out = embeddings;
  if (c.classes > 0) {
    out = layer_norm(out, "post_ln");
    out = b.view_2d(out, hidden, 1, b.nb(out, 1), 0);  // the class token
    out = linear(out, "head", hidden, c.classes);
    out = b.name(out, "logits");
  } else {
    out = b.name(out, "image_features");
  }
  b.set_output(out);
  b.expand(out);
  return b.finish();
}

}  // namespace

void add_vit_recipes(std::vector<Recipe>& out) {
  out.push_back({"vit-b16-224",
                 "ViT-B/16 at 224x224 (196 patches + class token, 768 wide, 12 layers, 12 heads, MLP 3072, "
                 "1000 classes, f16 weights), as ggml image encoders build it",
                 [](const Scaler& s, BuilderMirror* m) { return build_vit(scaled(kVitB16, s), m); }});
  out.push_back({"vit-clip-l14-336",
                 "CLIP ViT-L/14 at 336x336, the LLaVA 1.5 image encoder (576 patches + class token, 1024 wide, "
                 "24 layers, 16 heads, pre-layernorm, penultimate-layer features), as clip.cpp builds it",
                 [](const Scaler& s, BuilderMirror* m) { return build_vit(scaled(kClipL14, s), m); }});
}

}  // namespace galloc::zoo
