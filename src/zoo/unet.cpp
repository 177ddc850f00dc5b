// The Stable Diffusion 1.5 UNet, as stable-diffusion.cpp builds it (unet.hpp's UnetModel
// with ResBlock, SpatialTransformer, BasicTransformerBlock, CrossAttention, GEGLU, and
// ggml_extend.hpp's ggml_nn_* helpers): one denoising step on a batch of one latent.
// Channels 320/640/1280/1280, 2 res blocks per level, self- and cross-attention (to the
// 77 x 768 CLIP text context) at the first three levels, skip connections concatenated
// on the way up, conv as ggml_conv_2d (IM2COL + MUL_MAT), GROUP_NORM with 32 groups.
#include <string>
#include <vector>

#include "builder.hpp"

namespace galloc::zoo {

namespace {

using T = TensorId;

struct UnetConfig {
  std::int64_t latent;          // latent side (image side / 8)
  std::int64_t in_channels;     // 4
  std::int64_t model_channels;  // 320
  std::int64_t num_res_blocks;  // 2
  std::int64_t num_heads;       // 8
  std::int64_t context_len;     // 77 CLIP tokens
  std::int64_t context_dim;     // 768
};

constexpr std::int64_t kGroups = 32;
constexpr std::int64_t kChannelMult[] = {1, 2, 4, 4};
constexpr bool kAttentionAt[] = {true, true, true, false};  // attention_resolutions 4, 2, 1

UnetConfig scaled(UnetConfig c, const Scaler& s) {
  if (s.full()) return c;
  c.latent = s.width(c.latent, 8);  // three stride-2 downsamples
  c.model_channels = s.width(c.model_channels, kGroups);
  c.num_res_blocks = s.count(c.num_res_blocks);
  c.context_len = s.count(c.context_len);
  c.context_dim = s.width(c.context_dim, 8);
  return c;
}

class UnetGraph {
 public:
  UnetGraph(const UnetConfig& c, BuilderMirror* mirror) : c_(c), b_(mirror) {}

  Result<Graph> build() {
    const std::int64_t mc = c_.model_channels;
    const std::int64_t time_embed_dim = 4 * mc;
    const T x = b_.input("x", DataType::F32, {c_.latent, c_.latent, c_.in_channels, 1});
    const T timesteps = b_.input("timesteps", DataType::F32, {1});
    context_ = b_.input("context", DataType::F32, {c_.context_dim, c_.context_len, 1});

    // time embedding
    const T t_emb = b_.timestep_embedding(timesteps, mc);
    T emb = linear(t_emb, "time_embed.0", mc, time_embed_dim);
    emb = b_.silu_inplace(emb);
    emb = linear(emb, "time_embed.2", time_embed_dim, time_embed_dim);
    emb_ = emb;

    // input blocks
    std::vector<T> hs;
    std::vector<std::int64_t> hs_channels;
    T h = conv(x, "input_blocks.0.0", c_.in_channels, mc, 3, 1, 1);
    hs.push_back(h);
    hs_channels.push_back(mc);
    std::int64_t ch = mc;
    int block = 1;
    for (int level = 0; level < 4; ++level) {
      for (std::int64_t j = 0; j < c_.num_res_blocks; ++j) {
        const std::string prefix = "input_blocks." + std::to_string(block) + ".";
        const std::int64_t out = mc * kChannelMult[level];
        h = res_block(h, prefix + "0", ch, out);
        ch = out;
        if (kAttentionAt[level]) h = spatial_transformer(h, prefix + "1", ch);
        hs.push_back(h);
        hs_channels.push_back(ch);
        ++block;
      }
      if (level != 3) {
        h = conv(h, "input_blocks." + std::to_string(block) + ".0.op", ch, ch, 3, 2, 1);  // Downsample
        hs.push_back(h);
        hs_channels.push_back(ch);
        ++block;
      }
    }

    // middle block
    h = res_block(h, "middle_block.0", ch, ch);
    h = spatial_transformer(h, "middle_block.1", ch);
    h = res_block(h, "middle_block.2", ch, ch);

    // output blocks: each takes the latest skip connection
    block = 0;
    for (int level = 3; level >= 0; --level) {
      for (std::int64_t j = 0; j <= c_.num_res_blocks; ++j) {
        const std::string prefix = "output_blocks." + std::to_string(block) + ".";
        const T skip = hs.back();
        const std::int64_t skip_ch = hs_channels.back();
        hs.pop_back();
        hs_channels.pop_back();
        h = b_.concat(h, skip, 2);
        const std::int64_t out = mc * kChannelMult[level];
        h = res_block(h, prefix + "0", ch + skip_ch, out);
        ch = out;
        int sub = 1;
        if (kAttentionAt[level]) h = spatial_transformer(h, prefix + std::to_string(sub++), ch);
        if (level > 0 && j == c_.num_res_blocks) {  // Upsample: nearest x2, conv 3x3
          h = b_.upscale(h, 2);
          h = conv(h, prefix + std::to_string(sub) + ".conv", ch, ch, 3, 1, 1);
        }
        ++block;
      }
    }

    // out
    h = group_norm(h, "out.0", ch);
    h = b_.silu_inplace(h);
    h = conv(h, "out.2", ch, c_.in_channels, 3, 1, 1);
    h = b_.name(h, "eps");
    b_.set_output(h);
    b_.expand(h);
    return b_.finish();
  }

 private:
  // ggml_nn_linear: mul_mat + bias
  T linear(T x, const std::string& prefix, std::int64_t n_in, std::int64_t n_out, bool bias = true) {
    const T w = b_.weight(prefix + ".weight", DataType::F16, {n_in, n_out});
    T y = b_.mul_mat(w, x);
    if (bias) y = b_.add(y, b_.weight(prefix + ".bias", DataType::F32, {n_out}));
    return y;
  }

  // ggml_nn_conv_2d: ggml_conv_2d + bias reshaped to [1, 1, C, 1]
  T conv(T x, const std::string& prefix, std::int64_t in, std::int64_t out, int k, int stride, int pad) {
    const T w = b_.weight(prefix + ".weight", DataType::F16, {k, k, in, out});
    T y = b_.conv_2d(w, x, stride, stride, pad, pad);
    const T bias = b_.weight(prefix + ".bias", DataType::F32, {out});
    return b_.add(y, b_.reshape_4d(bias, 1, 1, out, 1));
  }

  // ggml_nn_group_norm with 4-D input: weight and bias reshaped to [1, 1, C, 1]
  T group_norm(T x, const std::string& prefix, std::int64_t channels) {
    const T w = b_.weight(prefix + ".weight", DataType::F32, {channels});
    const T bias = b_.weight(prefix + ".bias", DataType::F32, {channels});
    const T w4 = b_.reshape_4d(w, 1, 1, channels, 1);
    const T b4 = b_.reshape_4d(bias, 1, 1, channels, 1);
    T y = b_.group_norm(x, kGroups);
    y = b_.mul(y, w4);
    return b_.add(y, b4);
  }

  // ggml_nn_layer_norm
  T layer_norm(T x, const std::string& prefix, std::int64_t n) {
    const T w = b_.weight(prefix + ".weight", DataType::F32, {n});
    const T bias = b_.weight(prefix + ".bias", DataType::F32, {n});
    return b_.add(b_.mul(b_.norm(x), w), bias);
  }

  T res_block(T x, const std::string& prefix, std::int64_t in, std::int64_t out) {
    T h = group_norm(x, prefix + ".in_layers.0", in);
    h = b_.silu_inplace(h);
    h = conv(h, prefix + ".in_layers.2", in, out, 3, 1, 1);
    T emb_out = b_.silu(emb_);
    emb_out = linear(emb_out, prefix + ".emb_layers.1", 4 * c_.model_channels, out);  // [out, N]
    emb_out = b_.reshape_4d(emb_out, 1, 1, out, 1);
    h = b_.add(h, emb_out);
    h = group_norm(h, prefix + ".out_layers.0", out);
    h = b_.silu_inplace(h);
    h = conv(h, prefix + ".out_layers.3", out, out, 3, 1, 1);
    const T skip = in == out ? x : conv(x, prefix + ".skip_connection", in, out, 1, 1, 0);
    return b_.add(h, skip);
  }

  // ggml_nn_attention_ext without flash attention: q [C, Lq, N], k/v [C, Lk, N].
  T attention(T q, T k, T v, std::int64_t n_head) {
    const std::int64_t C = b_.ne(q, 0);
    const std::int64_t L_q = b_.ne(q, 1);
    const std::int64_t L_k = b_.ne(k, 1);
    const std::int64_t N = b_.ne(q, 2);
    const std::int64_t d_head = C / n_head;
    q = b_.reshape_4d(q, d_head, n_head, L_q, N);
    q = b_.cont(b_.permute(q, 0, 2, 1, 3));
    q = b_.reshape_3d(q, d_head, L_q, n_head * N);
    k = b_.reshape_4d(k, d_head, n_head, L_k, N);
    k = b_.cont(b_.permute(k, 0, 2, 1, 3));
    k = b_.reshape_3d(k, d_head, L_k, n_head * N);
    v = b_.reshape_4d(v, d_head, n_head, L_k, N);
    v = b_.cont(b_.permute(v, 1, 2, 0, 3));
    v = b_.reshape_3d(v, L_k, d_head, n_head * N);
    T kq = b_.mul_mat(k, q);  // [N * n_head, L_q, L_k]
    kq = b_.scale_inplace(kq);
    kq = b_.soft_max_inplace(kq);
    T kqv = b_.mul_mat(v, kq);  // [N * n_head, L_q, d_head]
    kqv = b_.reshape_4d(kqv, d_head, L_q, n_head, N);
    kqv = b_.permute(kqv, 0, 2, 1, 3);
    kqv = b_.cont(kqv);
    return b_.reshape_3d(kqv, d_head * n_head, L_q, N);  // [N, L_q, C]
  }

  T cross_attention(T x, T context, const std::string& prefix, std::int64_t dim, std::int64_t context_dim) {
    const T q = linear(x, prefix + ".to_q", dim, dim, false);
    const T k = linear(context, prefix + ".to_k", context_dim, dim, false);
    const T v = linear(context, prefix + ".to_v", context_dim, dim, false);
    const T y = attention(q, k, v, c_.num_heads);
    return linear(y, prefix + ".to_out.0", dim, dim);
  }

  // FeedForward with GEGLU: one projection split into value and gate halves by views.
  T feed_forward(T x, const std::string& prefix, std::int64_t dim) {
    const std::int64_t inner = 4 * dim;
    const T proj_w = b_.weight(prefix + ".net.0.proj.weight", DataType::F16, {dim, 2 * inner});
    const T proj_b = b_.weight(prefix + ".net.0.proj.bias", DataType::F32, {2 * inner});
    const T x_w = b_.view_2d(proj_w, dim, inner, b_.nb(proj_w, 1), 0);
    const T x_b = b_.view_1d(proj_b, inner, 0);
    const T gate_w = b_.view_2d(proj_w, dim, inner, b_.nb(proj_w, 1), b_.nb(proj_w, 1) * static_cast<Bytes>(inner));
    const T gate_b = b_.view_1d(proj_b, inner, b_.nb(proj_b, 0) * static_cast<Bytes>(inner));
    T value = b_.add(b_.mul_mat(x_w, x), x_b);
    T gate = b_.add(b_.mul_mat(gate_w, x), gate_b);
    gate = b_.gelu_inplace(gate);
    const T y = b_.mul(value, gate);
    return linear(y, prefix + ".net.2", inner, dim);
  }

  T spatial_transformer(T x, const std::string& prefix, std::int64_t channels) {
    const std::int64_t w = b_.ne(x, 0);
    const std::int64_t h = b_.ne(x, 1);
    const T x_in = x;
    x = group_norm(x, prefix + ".norm", channels);
    x = conv(x, prefix + ".proj_in", channels, channels, 1, 1, 0);
    x = b_.cont(b_.permute(x, 1, 2, 0, 3));    // [N, h, w, C]
    x = b_.reshape_3d(x, channels, w * h, 1);  // [N, h * w, C]
    // the transformer block (depth 1)
    const std::string block = prefix + ".transformer_blocks.0";
    T r = x;
    x = layer_norm(x, block + ".norm1", channels);
    x = cross_attention(x, x, block + ".attn1", channels, channels);
    x = b_.add(x, r);
    r = x;
    x = layer_norm(x, block + ".norm2", channels);
    x = cross_attention(x, context_, block + ".attn2", channels, c_.context_dim);
    x = b_.add(x, r);
    r = x;
    x = layer_norm(x, block + ".norm3", channels);
    x = feed_forward(x, block + ".ff", channels);
    x = b_.add(x, r);
    x = b_.reshape_4d(x, channels, w, h, 1);  // [N, h, w, C]
    x = b_.cont(b_.permute(x, 2, 0, 1, 3));   // [N, C, h, w]
    x = conv(x, prefix + ".proj_out", channels, channels, 1, 1, 0);
    return b_.add(x, x_in);
  }

  UnetConfig c_;
  GraphBuilder b_;
  T context_ = kNoTensor;
  T emb_ = kNoTensor;
};

void add(std::vector<Recipe>& out, std::string name, std::string description, UnetConfig config) {
  out.push_back({std::move(name), std::move(description),
                 [config](const Scaler& s, BuilderMirror* m) { return UnetGraph(scaled(config, s), m).build(); }});
}

}  // namespace

void add_unet_recipes(std::vector<Recipe>& out) {
  const std::string sd15 =
      "Stable Diffusion 1.5 UNet (channels 320/640/1280/1280, 2 res blocks a level, attention with "
      "77x768 text context at 3 levels, f16 weights), one step as stable-diffusion.cpp builds it, ";
  add(out, "unet-sd15-32", sd15 + "latent 32x32x4 (256x256 image)", {32, 4, 320, 2, 8, 77, 768});
  add(out, "unet-sd15-64", sd15 + "latent 64x64x4 (512x512 image)", {64, 4, 320, 2, 8, 77, 768});
}

}  // namespace galloc::zoo
