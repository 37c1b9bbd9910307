// The biLM's LSTM cell (bilm-tf's LSTMCell with cell and projection clipping, gates i, f, o, j) on
// packed batches, as two torch ops of spacy_elmo_lstmp.cpp (its one translation unit includes this
// file after its buffer pool): spacy_elmo/bilm/lstm_train.py calls them, one call per layer and pass.
// Packed layout (spacy_elmo/bilm/packing.py): per direction, the rows of step t are the packed rows
// offsets[t] .. offsets[t] + sizes[t] - 1, row r of a step continuing row r of the step before; the
// active batch only shrinks. Cell states are kept before clipping (clipped where read), so that the
// backward knows where the clip cut the gradient (as torch.clamp: zero where |c| > clip); a clip of
// +inf is no clipping.
#pragma once

namespace {

INLINE float clampf(float v, float clip) { return std::min(std::max(v, -clip), clip); }

// One row of one step: acts = sigmoid(i), sigmoid(f), sigmoid(o), tanh(j) of mm + xg + bias;
// c = f clip(c_prev) + i j (before clipping); m = o tanh(clip(c)), written to m and m_copy.
template <typename T>
__attribute__((noinline)) void elmo_forward_row(const T* __restrict mm, const T* __restrict xg,
                                                const float* __restrict bias, const float* __restrict c_prev,
                                                float* __restrict acts, float* __restrict c, T* __restrict m,
                                                T* __restrict m_copy, int64_t C, float clip) {
#pragma GCC ivdep
  for (int64_t k = 0; k < C; ++k) {
    float i = sigmoid(ld(mm, k) + ld(xg, k) + bias[k]);
    float f = sigmoid(ld(mm, C + k) + ld(xg, C + k) + bias[C + k]);
    float o = sigmoid(ld(mm, 2 * C + k) + ld(xg, 2 * C + k) + bias[2 * C + k]);
    float j = tanh_(ld(mm, 3 * C + k) + ld(xg, 3 * C + k) + bias[3 * C + k]);
    float raw = f * clampf(c_prev[k], clip) + i * j;
    acts[k] = i;
    acts[C + k] = f;
    acts[2 * C + k] = o;
    acts[3 * C + k] = j;
    c[k] = raw;
    float mk = o * tanh_(clampf(raw, clip));
    st(m, k, mk);
    st(m_copy, k, mk);
  }
}

// The derivative of elmo_forward_row: d_m = dL/dm_t; d_c = dL/d clip(c_t) from step t + 1 (or from
// the final state), updated in place to dL/d clip(c_{t-1}); writes dL/d pre-activations into d_pre
// and d_pre_copy and adds them to d_bias.
template <typename T>
__attribute__((noinline)) void elmo_backward_row(const T* __restrict d_m_in, const float* __restrict acts,
                                                 const float* __restrict c, const float* __restrict c_prev,
                                                 float* __restrict d_c, T* __restrict d_pre, T* __restrict d_pre_copy,
                                                 float* __restrict d_bias, int64_t C, float clip) {
#pragma GCC ivdep
  for (int64_t k = 0; k < C; ++k) {
    float i = acts[k], f = acts[C + k], o = acts[2 * C + k], j = acts[3 * C + k];
    float d_m = ld(d_m_in, k);
    float raw = c[k];
    float tc = tanh_(clampf(raw, clip));
    float dc = d_c[k] + d_m * o * (1.0f - tc * tc);
    dc = std::fabs(raw) <= clip ? dc : 0.0f;  // torch.clamp's gradient
    float di = dc * j * i * (1.0f - i);
    float df = dc * clampf(c_prev[k], clip) * f * (1.0f - f);
    float d_o = d_m * tc * o * (1.0f - o);
    float dj = dc * i * (1.0f - j * j);
    st(d_pre, k, di);
    st(d_pre, C + k, df);
    st(d_pre, 2 * C + k, d_o);
    st(d_pre, 3 * C + k, dj);
    st(d_pre_copy, k, di);
    st(d_pre_copy, C + k, df);
    st(d_pre_copy, 2 * C + k, d_o);
    st(d_pre_copy, 3 * C + k, dj);
    d_bias[k] += di;
    d_bias[C + k] += df;
    d_bias[2 * C + k] += d_o;
    d_bias[3 * C + k] += dj;
    d_c[k] = dc * f;
  }
}

// One row of a step's projection raw = m W_P: h = clip(raw) to the packed outputs, raw kept where
// clipping is on (h_raw), h copied to the next step's recurrent input (h_next) where the row goes on.
template <typename T>
__attribute__((noinline)) void elmo_h_row(const T* __restrict raw, T* __restrict h, T* __restrict h_raw,
                                          T* __restrict h_next, int64_t P, float clip) {
  for (int64_t p = 0; p < P; ++p) st(h, p, clampf(ld(raw, p), clip));
  if (h_raw) std::memcpy(h_raw, raw, P * sizeof(T));
  if (h_next) std::memcpy(h_next, h, P * sizeof(T));
}

// dL/d raw projection of one row: (d_out + d_h_rec) where |raw| <= clip, else 0 (d_h_rec: from the
// next step's recurrent product, absent where the row ends; h_raw absent without clipping).
template <typename T>
__attribute__((noinline)) void elmo_dh_row(const float* __restrict d_out, const T* __restrict d_h_rec,
                                           const T* __restrict h_raw, T* __restrict d_h, T* __restrict d_h_copy,
                                           int64_t P, float clip) {
  for (int64_t p = 0; p < P; ++p) {
    float v = d_out[p] + (d_h_rec ? ld(d_h_rec, p) : 0.0f);
    if (h_raw && !(std::fabs(ld(h_raw, p)) <= clip)) v = 0.0f;
    st(d_h, p, v);
    st(d_h_copy, p, v);
  }
}

std::vector<int64_t> offsets_of(at::IntArrayRef sizes) {
  std::vector<int64_t> offs(sizes.size() + 1, 0);
  for (size_t t = 0; t < sizes.size(); ++t) offs[t + 1] = offs[t] + sizes[t];
  return offs;
}

// a contiguous (D, n, k) view of the start of a flat buffer
at::Tensor block(const at::Tensor& flat, int64_t D, int64_t n, int64_t k) {
  return flat.narrow(0, 0, D * n * k).view({D, n, k});
}

template <typename T>
std::vector<at::Tensor> elmo_forward_impl(const at::Tensor& x, at::IntArrayRef sizes, const at::Tensor& wih_t,
                                          const at::Tensor& bias, const at::Tensor& whh_t, const at::Tensor& whr_t,
                                          float cell_clip, float proj_clip) {
  const int64_t D = x.size(0), N = x.size(1), C = whh_t.size(2) / 4, P = whr_t.size(2), S = sizes.size();
  const int64_t B = sizes[0];
  const auto dt = x.scalar_type();
  const bool clip_h = std::isfinite(proj_clip);
  auto& buf = pool();
  auto xg = buf.get(XG, {D, N, 4 * C}, dt);
  at::bmm_out(xg, x, wih_t);  // the input projection of all steps
  auto hs = buf.get(HS, {D, N, P}, dt);
  auto ms = buf.get(MS, {D, N, C}, dt);
  auto acts = buf.get(ACTS, {D, N, 4 * C}, at::kFloat);
  auto cs = buf.get(CS, {D, N, C}, at::kFloat);
  auto hs_raw = clip_h ? buf.get(HS_RAW, {D, N, P}, dt) : at::empty({0}, x.options());
  auto gates = buf.get(GATES, {D * B * 4 * C}, dt);
  auto h_cur = buf.get(H_CUR, {D * B * P}, dt);
  auto h_in = buf.get(H_IN, {D * B * P}, dt);
  auto m_cur = buf.get(M_CUR, {D * B * C}, dt);
  std::vector<float> zeros(C, 0.0f);
  const auto offs = offsets_of(sizes);
  for (int64_t t = 0; t < S; ++t) {
    const int64_t n = sizes[t], n_next = t + 1 < S ? sizes[t + 1] : 0, off = offs[t], prev = t ? offs[t - 1] : 0;
    auto g = block(gates, D, n, 4 * C);
    if (t)
      at::bmm_out(g, block(h_in, D, n, P), whh_t);
    else
      g.zero_();  // zero initial state
    const T* g_p = ptr<T>(g);
    const T* xg_p = ptr<T>(xg);
    const float* bias_p = ptr<float>(bias);
    float* acts_p = ptr<float>(acts);
    float* cs_p = ptr<float>(cs);
    T* ms_p = ptr<T>(ms);
    T* m_cur_p = ptr<T>(m_cur);
    at::parallel_for(0, D * n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        const int64_t d = k / n, r = k % n, row = d * N + off + r;
        const float* c_prev = t ? cs_p + (d * N + prev + r) * C : zeros.data();
        elmo_forward_row<T>(g_p + k * 4 * C, xg_p + row * 4 * C, bias_p + d * 4 * C, c_prev, acts_p + row * 4 * C,
                            cs_p + row * C, ms_p + row * C, m_cur_p + k * C, C, cell_clip);
      }
    });
    auto h = block(h_cur, D, n, P);
    at::bmm_out(h, block(m_cur, D, n, C), whr_t);
    const T* h_p = ptr<T>(h);
    T* hs_p = ptr<T>(hs);
    T* raw_p = clip_h ? ptr<T>(hs_raw) : nullptr;
    T* h_in_p = ptr<T>(h_in);
    for (int64_t k = 0; k < D * n; ++k) {
      const int64_t d = k / n, r = k % n, row = d * N + off + r;
      elmo_h_row<T>(h_p + k * P, hs_p + row * P, raw_p ? raw_p + row * P : nullptr,
                    r < n_next ? h_in_p + (d * n_next + r) * P : nullptr, P, proj_clip);
    }
  }
  return {hs, ms, acts, cs, hs_raw};
}

template <typename T>
std::vector<at::Tensor> elmo_backward_impl(const at::Tensor& d_out, const at::Tensor& d_c_last, at::IntArrayRef sizes,
                                           const at::Tensor& acts, const at::Tensor& cs, const at::Tensor& hs_raw,
                                           const at::Tensor& whh, const at::Tensor& whr, float cell_clip,
                                           float proj_clip) {
  const int64_t D = d_out.size(0), N = d_out.size(1), P = d_out.size(2), C = cs.size(2), S = sizes.size();
  const int64_t B = sizes[0];
  const auto dt = whh.scalar_type();
  const bool clip_h = std::isfinite(proj_clip);
  auto& buf = pool();
  auto d_pre = buf.get(D_PRE, {D, N, 4 * C}, dt);
  auto d_h_all = buf.get(D_H, {D, N, P}, dt);
  auto d_bias = at::zeros({D, 4 * C}, d_out.options());
  auto d_c = buf.get(D_C, {D, B, C}, at::kFloat);
  d_c.copy_(d_c_last);  // rows whose last step comes next start from the final state's gradient
  auto d_m = buf.get(D_M, {D * B * C}, dt);
  auto d_h_rec = buf.get(D_H_REC, {D * B * P}, dt);
  auto d_h_cur = buf.get(D_H_CUR, {D * B * P}, dt);
  auto d_pre_cur = buf.get(D_PRE_CUR, {D * B * 4 * C}, dt);
  std::vector<float> zeros(C, 0.0f);
  const auto offs = offsets_of(sizes);
  for (int64_t t = S - 1; t >= 0; --t) {
    const int64_t n = sizes[t], n_next = t + 1 < S ? sizes[t + 1] : 0, off = offs[t], prev = t ? offs[t - 1] : 0;
    const float* d_out_p = ptr<float>(d_out);
    const T* d_h_rec_p = ptr<T>(d_h_rec);
    const T* raw_p = clip_h ? ptr<T>(hs_raw) : nullptr;
    T* d_h_p = ptr<T>(d_h_all);
    T* d_h_cur_p = ptr<T>(d_h_cur);
    for (int64_t k = 0; k < D * n; ++k) {
      const int64_t d = k / n, r = k % n, row = d * N + off + r;
      elmo_dh_row<T>(d_out_p + row * P, r < n_next ? d_h_rec_p + (d * n_next + r) * P : nullptr,
                     raw_p ? raw_p + row * P : nullptr, d_h_p + row * P, d_h_cur_p + k * P, P, proj_clip);
    }
    auto dm = block(d_m, D, n, C);
    at::bmm_out(dm, block(d_h_cur, D, n, P), whr);
    const T* d_m_p = ptr<T>(dm);
    const float* acts_p = ptr<float>(acts);
    const float* cs_p = ptr<float>(cs);
    float* d_c_p = ptr<float>(d_c);
    T* d_pre_p = ptr<T>(d_pre);
    T* d_pre_cur_p = ptr<T>(d_pre_cur);
    float* d_bias_p = ptr<float>(d_bias);
    at::parallel_for(0, D, 1, [&](int64_t begin, int64_t end) {  // one direction per task: it owns its d_bias
      for (int64_t d = begin; d < end; ++d)
        for (int64_t r = 0; r < n; ++r) {
          const int64_t k = d * n + r, row = d * N + off + r;
          const float* c_prev = t ? cs_p + (d * N + prev + r) * C : zeros.data();
          elmo_backward_row<T>(d_m_p + k * C, acts_p + row * 4 * C, cs_p + row * C, c_prev, d_c_p + (d * B + r) * C,
                               d_pre_p + row * 4 * C, d_pre_cur_p + k * 4 * C, d_bias_p + d * 4 * C, C, cell_clip);
        }
    });
    if (t) {
      auto rec = block(d_h_rec, D, n, P);
      at::bmm_out(rec, block(d_pre_cur, D, n, 4 * C), whh);
    }
  }
  return {d_pre, d_h_all, d_bias};
}

void check_sizes(at::IntArrayRef sizes, int64_t N) {
  TORCH_CHECK(!sizes.empty() && sizes[0] > 0, "batch_sizes: expected at least one step of at least one row");
  int64_t total = 0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    TORCH_CHECK(sizes[t] > 0 && (t == 0 || sizes[t] <= sizes[t - 1]), "batch_sizes must be positive, non-increasing");
    total += sizes[t];
  }
  TORCH_CHECK(total == N, "batch_sizes sum to ", total, ", the inputs have ", N, " packed rows");
}

// x (D, N, I): packed rows in the product dtype (float32 or bfloat16); batch_sizes: rows per step;
// wih_t (D, I, 4C) (any strides), whh_t (D, P, 4C), whr_t (D, C, P) in the product dtype; bias (D, 4C)
// float32 with the forget bias; clips: +inf for none. Returns h (D, N, P) (clipped) and m (D, N, C) in
// the product dtype, gate activations (D, N, 4C) and cell states before clipping (D, N, C) float32, and
// h before clipping (D, N, P) (empty without projection clipping).
std::vector<at::Tensor> elmo_forward(const at::Tensor& x, at::IntArrayRef sizes, const at::Tensor& wih_t,
                                     const at::Tensor& bias, const at::Tensor& whh_t, const at::Tensor& whr_t,
                                     double cell_clip, double proj_clip) {
  const auto dt = x.scalar_type();
  TORCH_CHECK(dt == at::kFloat || dt == at::kBFloat16, "products must be float32 or bfloat16");
  check(x, "x", dt, 3);
  check(bias, "bias", at::kFloat, 2);
  check(whh_t, "whh_t", dt, 3);
  check(whr_t, "whr_t", dt, 3);
  TORCH_CHECK(wih_t.scalar_type() == dt && wih_t.dim() == 3 && wih_t.device().is_cpu(), "wih_t: expected (D, I, 4C)");
  const int64_t D = x.size(0), C = whh_t.size(2) / 4, P = whr_t.size(2);
  check_sizes(sizes, x.size(1));
  TORCH_CHECK(wih_t.size(0) == D && wih_t.size(1) == x.size(2) && wih_t.size(2) == 4 * C, "wih_t: expected (D, I, 4C)");
  TORCH_CHECK(bias.size(0) == D && bias.size(1) == 4 * C, "bias: expected (D, 4C)");
  TORCH_CHECK(whh_t.size(0) == D && whh_t.size(1) == P && whh_t.size(2) == 4 * C, "whh_t: expected (D, P, 4C)");
  TORCH_CHECK(whr_t.size(0) == D && whr_t.size(1) == C, "whr_t: expected (D, C, P)");
  TORCH_CHECK(cell_clip > 0 && proj_clip > 0, "clips must be > 0 (+inf for none)");
  at::NoGradGuard no_grad;
  return dt == at::kFloat
             ? elmo_forward_impl<float>(x, sizes, wih_t, bias, whh_t, whr_t, float(cell_clip), float(proj_clip))
             : elmo_forward_impl<uint16_t>(x, sizes, wih_t, bias, whh_t, whr_t, float(cell_clip), float(proj_clip));
}

// d_out (D, N, P) float32 = dL/dh; d_c_last (D, B, C) float32 = dL/d clipped final cell state (B =
// batch_sizes[0]); acts, cs, hs_raw from elmo_forward; whh (D, 4C, P), whr (D, P, C) in the product
// dtype. Returns dL/d pre-activations (D, N, 4C) and dL/d projection before clipping (D, N, P) in the
// product dtype, and dL/d bias (D, 4C) float32.
std::vector<at::Tensor> elmo_backward(const at::Tensor& d_out, const at::Tensor& d_c_last, at::IntArrayRef sizes,
                                      const at::Tensor& acts, const at::Tensor& cs, const at::Tensor& hs_raw,
                                      const at::Tensor& whh, const at::Tensor& whr, double cell_clip,
                                      double proj_clip) {
  const auto dt = whh.scalar_type();
  TORCH_CHECK(dt == at::kFloat || dt == at::kBFloat16, "products must be float32 or bfloat16");
  check(d_out, "d_out", at::kFloat, 3);
  check(d_c_last, "d_c_last", at::kFloat, 3);
  check(acts, "acts", at::kFloat, 3);
  check(cs, "cs", at::kFloat, 3);
  check(whh, "whh", dt, 3);
  check(whr, "whr", dt, 3);
  const int64_t D = d_out.size(0), N = d_out.size(1), P = d_out.size(2), C = cs.size(2);
  check_sizes(sizes, N);
  TORCH_CHECK(cs.size(0) == D && cs.size(1) == N, "cs: expected (D, N, C)");
  TORCH_CHECK(acts.size(0) == D && acts.size(1) == N && acts.size(2) == 4 * C, "acts: expected (D, N, 4C)");
  TORCH_CHECK(d_c_last.size(0) == D && d_c_last.size(1) == sizes[0] && d_c_last.size(2) == C,
              "d_c_last: expected (D, batch_sizes[0], C)");
  TORCH_CHECK(whh.size(0) == D && whh.size(1) == 4 * C && whh.size(2) == P, "whh: expected (D, 4C, P)");
  TORCH_CHECK(whr.size(0) == D && whr.size(1) == P && whr.size(2) == C, "whr: expected (D, P, C)");
  TORCH_CHECK(cell_clip > 0 && proj_clip > 0, "clips must be > 0 (+inf for none)");
  if (std::isfinite(proj_clip)) {
    check(hs_raw, "hs_raw", dt, 3);
    TORCH_CHECK(hs_raw.size(0) == D && hs_raw.size(1) == N && hs_raw.size(2) == P, "hs_raw: expected (D, N, P)");
  }
  at::NoGradGuard no_grad;
  return dt == at::kFloat ? elmo_backward_impl<float>(d_out, d_c_last, sizes, acts, cs, hs_raw, whh, whr,
                                                      float(cell_clip), float(proj_clip))
                          : elmo_backward_impl<uint16_t>(d_out, d_c_last, sizes, acts, cs, hs_raw, whh, whr,
                                                         float(cell_clip), float(proj_clip));
}

}  // namespace
