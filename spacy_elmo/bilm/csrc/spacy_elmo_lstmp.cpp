// The native training kernels: the recurrences of the biLM's LSTM under autograd (elmo_cell.h, for
// spacy_elmo/bilm/lstm_train.py) and of the pretraining's ProjectedLSTM (spacy_elmo/pretrain/recurrent.py)
// as torch ops, one call per layer each, and the pretraining's cross-entropy and char CNN max. The per-step
// products run through at::bmm_out, the element-wise steps are plain loops that the compiler vectorises (built and loaded by spacy_elmo/bilm/native.py).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "numerics.h"

namespace {

// One row (one direction, one sentence) of one step, gates in torch's order i, f, g, o:
// acts = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o) of mm + xg + bias; c = f c_prev + i g; m = o tanh(c).
template <typename T>
__attribute__((noinline)) void forward_row(const T* __restrict mm, const T* __restrict xg, const float* __restrict bias,
                                           const float* __restrict c_prev, float* __restrict acts, float* __restrict c,
                                           T* __restrict m, T* __restrict m_copy, int64_t C) {
#pragma GCC ivdep
  for (int64_t j = 0; j < C; ++j) {
    float i = sigmoid(ld(mm, j) + ld(xg, j) + bias[j]);
    float f = sigmoid(ld(mm, C + j) + ld(xg, C + j) + bias[C + j]);
    float g = tanh_(ld(mm, 2 * C + j) + ld(xg, 2 * C + j) + bias[2 * C + j]);
    float o = sigmoid(ld(mm, 3 * C + j) + ld(xg, 3 * C + j) + bias[3 * C + j]);
    float cc = f * c_prev[j] + i * g;
    acts[j] = i;
    acts[C + j] = f;
    acts[2 * C + j] = g;
    acts[3 * C + j] = o;
    c[j] = cc;
    float mj = o * tanh_(cc);
    st(m, j, mj);
    st(m_copy, j, mj);
  }
}

// The derivative of forward_row: d_m = dL/dm_t, d_c = dL/dc_t from step t + 1 (updated in place to
// dL/dc_{t-1} through the cell path); writes dL/d pre-activations into d_pre and adds them to d_bias.
template <typename T>
__attribute__((noinline)) void backward_row(const T* __restrict d_m_in, const float* __restrict acts,
                                            const float* __restrict c, const float* __restrict c_prev,
                                            float* __restrict d_c, T* __restrict d_pre, T* __restrict d_pre_copy,
                                            float* __restrict d_bias, int64_t C) {
#pragma GCC ivdep
  for (int64_t j = 0; j < C; ++j) {
    float i = acts[j], f = acts[C + j], g = acts[2 * C + j], o = acts[3 * C + j];
    float d_m = ld(d_m_in, j);
    float tc = tanh_(c[j]);
    float dc = d_c[j] + d_m * o * (1.0f - tc * tc);
    float di = dc * g * i * (1.0f - i);
    float df = dc * c_prev[j] * f * (1.0f - f);
    float dg = dc * i * (1.0f - g * g);
    float d_o = d_m * tc * o * (1.0f - o);
    st(d_pre, j, di);
    st(d_pre, C + j, df);
    st(d_pre, 2 * C + j, dg);
    st(d_pre, 3 * C + j, d_o);
    st(d_pre_copy, j, di);
    st(d_pre_copy, C + j, df);
    st(d_pre_copy, 2 * C + j, dg);
    st(d_pre_copy, 3 * C + j, d_o);
    d_bias[j] += di;
    d_bias[C + j] += df;
    d_bias[2 * C + j] += dg;
    d_bias[3 * C + j] += d_o;
    d_c[j] = dc * f;
  }
}

// d_h = d_out + d_h_rec (d_h_rec in the product dtype; absent at the last step), rounded to T.
template <typename T>
__attribute__((noinline)) void add_row(const float* __restrict d_out, const T* __restrict d_h_rec, T* __restrict d_h,
                                       T* __restrict d_h_copy, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    float v = d_out[j] + (d_h_rec ? ld(d_h_rec, j) : 0.0f);
    st(d_h, j, v);
    st(d_h_copy, j, v);
  }
}

template <typename T> T* ptr(const at::Tensor& t) { return reinterpret_cast<T*>(t.data_ptr()); }


// Reused buffers for the large per-layer tensors (gate inputs and activations, cell states, outputs,
// derivatives: tens of MB each). Fresh allocations of that size are new pages every step (glibc
// maps them, the kernel zeroes them on first touch: measured ~40 ms of system time per layer and
// step at the shipped shape). Buffers are kept per role (xg, acts, ...: one per layer in flight);
// a buffer is free again once no tensor uses its storage, and one too small for a request is
// replaced by one 1/4 larger than it, so that varying batch shapes settle after a few steps.
enum Role {
  XG, HS, MS, ACTS, CS, GATES, H_CUR, M_CUR, D_PRE, D_H, D_C, D_M, D_H_REC, D_H_CUR, D_PRE_CUR, HS_RAW, H_IN, N_ROLES
};

class Pool {
 public:
  at::Tensor get(Role role, at::IntArrayRef shape, at::ScalarType dtype) {
    int64_t n = at::elementSize(dtype);
    for (auto s : shape) n *= s;
    std::lock_guard<std::mutex> lock(mutex_);
    auto& list = buffers_[role];
    at::Tensor* pick = nullptr;
    for (auto& b : list)
      if (b.storage().use_count() == 1 && b.numel() >= n) {
        pick = &b;
        break;
      }
    if (!pick) {
      at::Tensor fresh = at::empty({n + n / 4 + 64}, at::TensorOptions().dtype(at::kByte));
      for (auto& b : list)  // replace a free buffer that is too small, else add one
        if (b.storage().use_count() == 1) {
          pick = &b;
          break;
        }
      if (pick) {
        *pick = fresh;
      } else {
        list.push_back(fresh);
        pick = &list.back();
      }
    }
    return pick->narrow(0, 0, n).view(dtype).view(shape);
  }

 private:
  std::mutex mutex_;
  std::vector<at::Tensor> buffers_[N_ROLES];
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: tensors may outlive static destruction order
  return *p;
}

void check(const at::Tensor& t, const char* name, at::ScalarType dtype, int64_t dim) {
  TORCH_CHECK(t.device().is_cpu(), name, " must be on the CPU");
  TORCH_CHECK(t.scalar_type() == dtype, name, " has dtype ", t.scalar_type(), ", expected ", dtype);
  TORCH_CHECK(t.dim() == dim && t.is_contiguous(), name, " must be a contiguous ", dim, "-d tensor");
}

template <typename T>
std::vector<at::Tensor> forward_impl(const at::Tensor& x, int64_t S, const at::Tensor& wih_t, const at::Tensor& bias,
                                     const at::Tensor& whh_t, const at::Tensor& whr_t) {
  const int64_t D = x.size(0), B = x.size(1) / S, C = whh_t.size(2) / 4, P = whr_t.size(2);
  const auto dt = x.scalar_type();
  auto& buf = pool();
  auto xg = buf.get(XG, {D, S, B, 4 * C}, dt);
  auto xg_all = xg.view({D, S * B, 4 * C});
  at::bmm_out(xg_all, x, wih_t);  // the input projection of all steps
  auto hs = buf.get(HS, {D, S, B, P}, dt);
  auto ms = buf.get(MS, {D, S, B, C}, dt);
  auto acts = buf.get(ACTS, {D, S, B, 4 * C}, at::kFloat);
  auto cs = buf.get(CS, {D, S, B, C}, at::kFloat);
  // per-step operands of the products in contiguous (D, B, n) blocks (bmm copies a strided batch
  // such as hs[:, t]; two mm per step, one per direction, are slower than one bmm)
  auto gates = buf.get(GATES, {D, B, 4 * C}, dt);
  auto h_cur = buf.get(H_CUR, {D, B, P}, dt);
  auto m_cur = buf.get(M_CUR, {D, B, C}, dt);
  gates.zero_();  // h_{-1} W_hh^T = 0
  std::vector<float> zeros(C, 0.0f);
  for (int64_t t = 0; t < S; ++t) {
    if (t) at::bmm_out(gates, h_cur, whh_t);
    // rows (d, b) of step t: element offsets of the (D, S, B, n) tensors
    const T* gates_p = ptr<T>(gates);
    const T* xg_p = ptr<T>(xg) + t * B * 4 * C;
    const float* bias_p = ptr<float>(bias);
    float* acts_p = ptr<float>(acts) + t * B * 4 * C;
    float* cs_p = ptr<float>(cs) + t * B * C;
    T* ms_p = ptr<T>(ms) + t * B * C;
    T* m_cur_p = ptr<T>(m_cur);
    at::parallel_for(0, D * B, 1, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        const int64_t d = k / B, b = k % B;
        const int64_t g_off = (d * S * B + b) * 4 * C, c_off = (d * S * B + b) * C;
        const float* c_prev = t ? cs_p + c_off - B * C : zeros.data();
        forward_row<T>(gates_p + k * 4 * C, xg_p + g_off, bias_p + d * 4 * C, c_prev, acts_p + g_off, cs_p + c_off,
                       ms_p + c_off, m_cur_p + k * C, C);
      }
    });
    at::bmm_out(h_cur, m_cur, whr_t);
    hs.select(1, t).copy_(h_cur);
  }
  return {hs, ms, acts, cs};
}

template <typename T>
std::vector<at::Tensor> backward_impl(const at::Tensor& d_out, const at::Tensor& acts, const at::Tensor& cs,
                                      const at::Tensor& whh, const at::Tensor& whr) {
  const int64_t D = d_out.size(0), S = d_out.size(1), B = d_out.size(2), P = d_out.size(3), C = cs.size(3);
  const auto dt = whh.scalar_type();
  auto& buf = pool();
  auto d_pre = buf.get(D_PRE, {D, S, B, 4 * C}, dt);
  auto d_h_all = buf.get(D_H, {D, S, B, P}, dt);
  auto d_bias = at::zeros({D, 4 * C}, d_out.options());
  auto d_c = buf.get(D_C, {D, B, C}, at::kFloat);
  d_c.zero_();
  auto d_m = buf.get(D_M, {D, B, C}, dt);
  auto d_h_rec = buf.get(D_H_REC, {D, B, P}, dt);
  auto d_h_cur = buf.get(D_H_CUR, {D, B, P}, dt);
  auto d_pre_cur = buf.get(D_PRE_CUR, {D, B, 4 * C}, dt);
  std::vector<float> zeros(C, 0.0f);
  for (int64_t t = S - 1; t >= 0; --t) {
    const float* d_out_p = ptr<float>(d_out) + t * B * P;
    const T* d_h_rec_p = ptr<T>(d_h_rec);
    T* d_h_p = ptr<T>(d_h_all) + t * B * P;
    T* d_h_cur_p = ptr<T>(d_h_cur);
    for (int64_t k = 0; k < D * B; ++k) {
      const int64_t off = (k / B * S * B + k % B) * P;
      add_row<T>(d_out_p + off, t < S - 1 ? d_h_rec_p + k * P : nullptr, d_h_p + off, d_h_cur_p + k * P, P);
    }
    at::bmm_out(d_m, d_h_cur, whr);
    const T* d_m_p = ptr<T>(d_m);
    const float* acts_p = ptr<float>(acts) + t * B * 4 * C;
    const float* cs_p = ptr<float>(cs) + t * B * C;
    float* d_c_p = ptr<float>(d_c);
    T* d_pre_p = ptr<T>(d_pre) + t * B * 4 * C;
    T* d_pre_cur_p = ptr<T>(d_pre_cur);
    float* d_bias_p = ptr<float>(d_bias);
    // one direction per task: each owns its row of d_bias
    at::parallel_for(0, D, 1, [&](int64_t begin, int64_t end) {
      for (int64_t d = begin; d < end; ++d)
        for (int64_t b = 0; b < B; ++b) {
          const int64_t k = d * B + b, g_off = (d * S * B + b) * 4 * C, c_off = (d * S * B + b) * C;
          const float* c_prev = t ? cs_p + c_off - B * C : zeros.data();
          backward_row<T>(d_m_p + k * C, acts_p + g_off, cs_p + c_off, c_prev, d_c_p + k * C, d_pre_p + g_off,
                          d_pre_cur_p + k * 4 * C, d_bias_p + d * 4 * C, C);
        }
    });
    if (t) at::bmm_out(d_h_rec, d_pre_cur, whh);
  }
  return {d_pre, d_h_all, d_bias};
}

}  // namespace

#include "elmo_cell.h"  // the biLM's cell on packed batches: elmo_forward, elmo_backward

namespace {

// x (D, S * B, I): the inputs of S steps of B rows, step-major, in the product dtype (float32 or
// bfloat16); wih_t (D, I, 4C) (any strides), whh_t (D, P, 4C), whr_t (D, C, P) in the product dtype;
// bias (D, 4C) float32 = b_ih + b_hh. Returns h (D, S, B, P) and m (D, S, B, C) in the product dtype,
// gate activations (D, S, B, 4C) and cell states (D, S, B, C) float32.
std::vector<at::Tensor> lstmp_forward(const at::Tensor& x, int64_t S, const at::Tensor& wih_t, const at::Tensor& bias,
                                      const at::Tensor& whh_t, const at::Tensor& whr_t) {
  const auto dt = x.scalar_type();
  TORCH_CHECK(dt == at::kFloat || dt == at::kBFloat16, "products must be float32 or bfloat16");
  check(x, "x", dt, 3);
  check(bias, "bias", at::kFloat, 2);
  check(whh_t, "whh_t", dt, 3);
  check(whr_t, "whr_t", dt, 3);
  TORCH_CHECK(wih_t.scalar_type() == dt && wih_t.dim() == 3 && wih_t.device().is_cpu(), "wih_t: expected (D, I, 4C)");
  const int64_t D = x.size(0), C = whh_t.size(2) / 4, P = whr_t.size(2);
  TORCH_CHECK(S > 0 && x.size(1) % S == 0, "x: expected (D, S * B, I)");
  TORCH_CHECK(wih_t.size(0) == D && wih_t.size(1) == x.size(2) && wih_t.size(2) == 4 * C, "wih_t: expected (D, I, 4C)");
  TORCH_CHECK(bias.size(0) == D && bias.size(1) == 4 * C, "bias: expected (D, 4C)");
  TORCH_CHECK(whh_t.size(0) == D && whh_t.size(1) == P && whh_t.size(2) == 4 * C, "whh_t: expected (D, P, 4C)");
  TORCH_CHECK(whr_t.size(0) == D && whr_t.size(1) == C, "whr_t: expected (D, C, P)");
  at::NoGradGuard no_grad;
  return dt == at::kFloat ? forward_impl<float>(x, S, wih_t, bias, whh_t, whr_t)
                          : forward_impl<uint16_t>(x, S, wih_t, bias, whh_t, whr_t);
}

// d_out (D, S, B, P) float32 = dL/dh; acts, cs from lstmp_forward; whh (D, 4C, P), whr (D, P, C) in the
// product dtype. Returns dL/d pre-activations (D, S, B, 4C) and dL/dh incl. the recurrent path
// (D, S, B, P) in the product dtype, and dL/d bias (D, 4C) float32.
std::vector<at::Tensor> lstmp_backward(const at::Tensor& d_out, const at::Tensor& acts, const at::Tensor& cs,
                                       const at::Tensor& whh, const at::Tensor& whr) {
  const auto dt = whh.scalar_type();
  TORCH_CHECK(dt == at::kFloat || dt == at::kBFloat16, "products must be float32 or bfloat16");
  check(d_out, "d_out", at::kFloat, 4);
  check(acts, "acts", at::kFloat, 4);
  check(cs, "cs", at::kFloat, 4);
  check(whh, "whh", dt, 3);
  check(whr, "whr", dt, 3);
  const int64_t D = d_out.size(0), S = d_out.size(1), B = d_out.size(2), P = d_out.size(3), C = cs.size(3);
  TORCH_CHECK(cs.size(0) == D && cs.size(1) == S && cs.size(2) == B, "cs: expected (D, S, B, C)");
  TORCH_CHECK(acts.size(0) == D && acts.size(1) == S && acts.size(2) == B && acts.size(3) == 4 * C,
              "acts: expected (D, S, B, 4C)");
  TORCH_CHECK(whh.size(0) == D && whh.size(1) == 4 * C && whh.size(2) == P, "whh: expected (D, 4C, P)");
  TORCH_CHECK(whr.size(0) == D && whr.size(1) == P && whr.size(2) == C, "whr: expected (D, P, C)");
  at::NoGradGuard no_grad;
  return dt == at::kFloat ? backward_impl<float>(d_out, acts, cs, whh, whr)
                          : backward_impl<uint16_t>(d_out, acts, cs, whh, whr);
}


// Cross-entropy of one row of logits x (V), in place: returns -log softmax(x)[target]; with grad,
// overwrites x with scale * (softmax(x) - onehot(target)), rounded once to T.
template <typename T>
__attribute__((noinline)) float cross_entropy_row(T* __restrict x, int64_t V, int64_t target, float scale, bool grad) {
  float m = -3.0e38f;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < V; ++j) m = std::max(m, ld(x, j));
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < V; ++j) sum += fast_exp(ld(x, j) - m);
  const float lse = m + std::log(sum), x_target = ld(x, target);
  if (grad) {
    for (int64_t j = 0; j < V; ++j) st(x, j, fast_exp(ld(x, j) - lse) * scale);
    st(x, target, (fast_exp(x_target - lse) - 1.0f) * scale);
  }
  return lse - x_target;
}

// logits (M, V) float32 or bfloat16, contiguous; target (M) int64 in [0, V). Returns nll (M) float32;
// with grad, logits become the gradient of scale * sum(nll) with respect to them.
at::Tensor cross_entropy_rows(const at::Tensor& logits, const at::Tensor& target, double scale, bool grad) {
  const auto dt = logits.scalar_type();
  TORCH_CHECK(dt == at::kFloat || dt == at::kBFloat16, "logits must be float32 or bfloat16");
  check(logits, "logits", dt, 2);
  check(target, "target", at::kLong, 1);
  const int64_t M = logits.size(0), V = logits.size(1);
  TORCH_CHECK(target.size(0) == M, "target: expected (M,)");
  const int64_t* t = target.data_ptr<int64_t>();
  for (int64_t r = 0; r < M; ++r) TORCH_CHECK(t[r] >= 0 && t[r] < V, "target out of range");
  auto nll = at::empty({M}, logits.options().dtype(at::kFloat));
  float* out = nll.data_ptr<float>();
  at::parallel_for(0, M, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (dt == at::kFloat)
        out[r] = cross_entropy_row<float>(ptr<float>(logits) + r * V, V, t[r], float(scale), grad);
      else
        out[r] = cross_entropy_row<uint16_t>(ptr<uint16_t>(logits) + r * V, V, t[r], float(scale), grad);
    }
  });
  return nll;
}


// The char CNN's max over positions: y (T, pos, n) -> values (T, n) float32 and the first position of
// each maximum (T, n) int32.
template <typename T>
__attribute__((noinline)) void max_positions_impl(const T* __restrict y, int64_t nT, int64_t pos, int64_t n,
                                                  float* __restrict values, int32_t* __restrict index) {
  for (int64_t t = 0; t < nT; ++t) {
    float* v = values + t * n;
    int32_t* ix = index + t * n;
    const T* row = y + t * pos * n;
    for (int64_t c = 0; c < n; ++c) {
      v[c] = ld(row, c);
      ix[c] = 0;
    }
    for (int64_t p = 1; p < pos; ++p) {
      const T* r = row + p * n;
      for (int64_t c = 0; c < n; ++c) {
        const float x = ld(r, c);
        const bool more = x > v[c];
        v[c] = more ? x : v[c];
        ix[c] = more ? int32_t(p) : ix[c];
      }
    }
  }
}

std::vector<at::Tensor> max_positions(const at::Tensor& y) {
  const auto dt = y.scalar_type();
  TORCH_CHECK(dt == at::kFloat || dt == at::kBFloat16, "y must be float32 or bfloat16");
  check(y, "y", dt, 3);
  const int64_t nT = y.size(0), pos = y.size(1), n = y.size(2);
  TORCH_CHECK(pos > 0, "y: no positions");
  auto values = at::empty({nT, n}, y.options().dtype(at::kFloat));
  auto index = at::empty({nT, n}, y.options().dtype(at::kInt));
  at::parallel_for(0, nT, 16, [&](int64_t begin, int64_t end) {
    if (dt == at::kFloat)
      max_positions_impl<float>(ptr<float>(y) + begin * pos * n, end - begin, pos, n,
                                ptr<float>(values) + begin * n, ptr<int32_t>(index) + begin * n);
    else
      max_positions_impl<uint16_t>(ptr<uint16_t>(y) + begin * pos * n, end - begin, pos, n,
                                   ptr<float>(values) + begin * n, ptr<int32_t>(index) + begin * n);
  });
  return {values, index};
}

// The derivative of conv + max over positions, where only each maximum's window receives gradient:
// g (T, n) float32 = dL/d max, index (T, n) int32 from max_positions, emb (T, K, d) the convolution's
// input, wt (n, w * d) its filters (row c: taps, then channels: the layout of a window emb[t, p:p+w]),
// both in the product dtype. Adds dL/d emb into d_emb (T, K, d) float32; returns dL/d wt (n, w * d) float32.
template <typename T>
__attribute__((noinline)) void conv_max_backward_impl(const float* __restrict g, const int32_t* __restrict index,
                                                      const T* __restrict emb, const T* __restrict wt,
                                                      float* __restrict d_emb, float* __restrict d_wt, int64_t nT,
                                                      int64_t K, int64_t d, int64_t n, int64_t wd) {
  for (int64_t t = 0; t < nT; ++t)
    for (int64_t c = 0; c < n; ++c) {
      const float gv = g[t * n + c];
      if (gv == 0.0f) continue;
      const int64_t off = (t * K + index[t * n + c]) * d;
      const T* __restrict src = emb + off;
      const T* __restrict w_row = wt + c * wd;
      float* __restrict dw = d_wt + c * wd;
      float* __restrict de = d_emb + off;
      for (int64_t k = 0; k < wd; ++k) {
        dw[k] += gv * ld(src, k);
        de[k] += gv * ld(w_row, k);
      }
    }
}

at::Tensor conv_max_backward(const at::Tensor& g, const at::Tensor& index, const at::Tensor& emb, const at::Tensor& wt,
                             at::Tensor d_emb) {
  const auto dt = emb.scalar_type();
  TORCH_CHECK(dt == at::kFloat || dt == at::kBFloat16, "emb must be float32 or bfloat16");
  check(g, "g", at::kFloat, 2);
  check(index, "index", at::kInt, 2);
  check(emb, "emb", dt, 3);
  check(wt, "wt", dt, 2);
  check(d_emb, "d_emb", at::kFloat, 3);
  const int64_t nT = emb.size(0), K = emb.size(1), d = emb.size(2), n = wt.size(0), wd = wt.size(1);
  TORCH_CHECK(wd % d == 0 && wd / d <= K, "wt: expected (n, w * d) with w <= K");
  TORCH_CHECK(g.size(0) == nT && g.size(1) == n && index.size(0) == nT && index.size(1) == n,
              "g, index: expected (T, n)");
  TORCH_CHECK(d_emb.size(0) == nT && d_emb.size(1) == K && d_emb.size(2) == d, "d_emb: expected (T, K, d)");
  const int32_t* ix = index.data_ptr<int32_t>();
  const int64_t last = K - wd / d;
  for (int64_t k = 0; k < nT * n; ++k) TORCH_CHECK(ix[k] >= 0 && ix[k] <= last, "index out of range");
  auto d_wt = at::zeros({n, wd}, g.options());
  if (dt == at::kFloat)
    conv_max_backward_impl<float>(g.data_ptr<float>(), ix, ptr<float>(emb), ptr<float>(wt), d_emb.data_ptr<float>(),
                                  d_wt.data_ptr<float>(), nT, K, d, n, wd);
  else
    conv_max_backward_impl<uint16_t>(g.data_ptr<float>(), ix, ptr<uint16_t>(emb), ptr<uint16_t>(wt),
                                     d_emb.data_ptr<float>(), d_wt.data_ptr<float>(), nT, K, d, n, wd);
  return d_wt;
}

}  // namespace

TORCH_LIBRARY(spacy_elmo_lstmp, m) {
  m.def("elmo_forward(Tensor x, int[] batch_sizes, Tensor wih_t, Tensor bias, Tensor whh_t, Tensor whr_t, "
        "float cell_clip, float proj_clip) -> Tensor[]");
  m.def("elmo_backward(Tensor d_out, Tensor d_c_last, int[] batch_sizes, Tensor acts, Tensor cs, Tensor hs_raw, "
        "Tensor whh, Tensor whr, float cell_clip, float proj_clip) -> Tensor[]");
  m.def("forward(Tensor x, int steps, Tensor wih_t, Tensor bias, Tensor whh_t, Tensor whr_t) -> Tensor[]");
  m.def("backward(Tensor d_out, Tensor acts, Tensor cs, Tensor whh, Tensor whr) -> Tensor[]");
  m.def("cross_entropy_rows(Tensor(a!) logits, Tensor target, float scale, bool grad) -> Tensor");
  m.def("max_positions(Tensor y) -> Tensor[]");
  m.def("conv_max_backward(Tensor g, Tensor index, Tensor emb, Tensor wt, Tensor(a!) d_emb) -> Tensor");
}

TORCH_LIBRARY_IMPL(spacy_elmo_lstmp, CPU, m) {
  m.impl("elmo_forward", &elmo_forward);
  m.impl("elmo_backward", &elmo_backward);
  m.impl("forward", &lstmp_forward);
  m.impl("backward", &lstmp_backward);
  m.impl("cross_entropy_rows", &cross_entropy_rows);
  m.impl("max_positions", &max_positions);
  m.impl("conv_max_backward", &conv_max_backward);
}
