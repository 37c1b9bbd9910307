// The native training kernels: the recurrence of the biLM's LSTM under autograd (elmo_cell.h, for
// spacy_elmo/bilm/lstm_train.py) as torch ops, one call per layer and pass, and the pretraining's
// cross-entropy and char CNN max. The per-step
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

}  // namespace

#include "elmo_cell.h"  // the biLM's cell on packed batches: elmo_forward, elmo_backward

namespace {

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
  m.def("cross_entropy_rows(Tensor(a!) logits, Tensor target, float scale, bool grad) -> Tensor");
  m.def("max_positions(Tensor y) -> Tensor[]");
  m.def("conv_max_backward(Tensor g, Tensor index, Tensor emb, Tensor wt, Tensor(a!) d_emb) -> Tensor");
}

TORCH_LIBRARY_IMPL(spacy_elmo_lstmp, CPU, m) {
  m.impl("elmo_forward", &elmo_forward);
  m.impl("elmo_backward", &elmo_backward);
  m.impl("cross_entropy_rows", &cross_entropy_rows);
  m.impl("max_positions", &max_positions);
  m.impl("conv_max_backward", &conv_max_backward);
}
