// Node results remembered across interpreter runs (see reprokit/runtime/node_memo.h).
#include "reprokit/runtime/node_memo.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "node_memo_keys.h"
#include "reprokit/runtime/memory_budget.h"

namespace reprokit {

namespace node_memo {

namespace {

// Two 64-bit lanes, each a multiply-xorshift mix of every word (as in splitmix64), with different
// constants so that the halves are independent.
struct Hasher {
  uint64_t a = 0x9e3779b97f4a7c15ULL, b = 0xc2b2ae3d27d4eb4fULL;
  static uint64_t avalanche(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  void word(uint64_t w) {
    a = avalanche(a ^ w) + 0x632be59bd9b4e019ULL;
    b = avalanche(b + w * 0xff51afd7ed558ccdULL) ^ 0x8cb92ba72f3d8dd7ULL;
  }
  void bytes(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    word(n);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      word(w);
    }
    uint64_t tail = 0;
    if (n > i) std::memcpy(&tail, p + i, n - i);  // an empty tensor's data may be null
    word(tail);
  }
  void text(std::string_view s) { bytes(s.data(), s.size()); }
  void key(const Key& k) { word(k.a), word(k.b); }
  Key done() const { return {avalanche(a), avalanche(b ^ 0x5851f42d4c957f2dULL)}; }
};

struct KeyHash {
  size_t operator()(const Key& k) const { return static_cast<size_t>(k.a); }
};

struct Store {
  std::mutex mutex;
  size_t max_bytes = 0, bytes = 0;
  std::unordered_map<Key, Tensor, KeyHash> values;
  std::deque<Key> order;  // oldest first
  uint64_t hits = 0, misses = 0;
};

Store& store() {
  static Store s;
  return s;
}

size_t bytes_of(const Tensor& t) { return t.storage_bytes(); }

// A copy with its own storage, just large enough: no caller can change what is remembered.
Tensor copy_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  Tensor out = Tensor::zeros(c.dtype(), c.shape());
  if (c.numel() > 0) std::memcpy(out.data(), c.data(), static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
  return out;
}

// Forgets the oldest results until `room` more bytes fit (the caller holds the mutex).
void make_room(Store& s, size_t room) {
  while (s.bytes + room > s.max_bytes && !s.order.empty()) {
    auto it = s.values.find(s.order.front());
    s.bytes -= bytes_of(it->second);
    s.values.erase(it);
    s.order.pop_front();
  }
}

}  // namespace

bool applies(const InterpretOptions& o) {
  if (o.perturb_values_seed) return false;
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.max_bytes > 0;
}

Key of_run(const InterpretOptions& o) {
  Hasher h;
  h.text("reprokit-interpreter-run");
  h.word(o.cast_to_f64);
  h.word(static_cast<uint64_t>(o.accumulation));
  uint64_t band;
  std::memcpy(&band, &o.flip_kinks_band, sizeof band);
  h.word(band);
  return h.done();
}

Key of_input(const Tensor& t, const Key& run) {
  Hasher h;
  h.text("input");
  h.key(run);
  h.word(static_cast<uint64_t>(t.dtype()));
  for (int64_t d : t.shape()) h.word(static_cast<uint64_t>(d));
  const Tensor c = t.contiguous();
  h.bytes(c.data(), static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
  return h.done();
}

Key of_node(const Node& n, const std::vector<Key>& value_operands, const Key& run) {
  Hasher h;
  h.text("node");
  h.key(run);
  h.word(static_cast<uint64_t>(n.op));
  h.text(n.type.str());
  size_t next = 0;
  for (const Operand& o : n.operands) {
    if (o.is_value()) {
      h.word(1);
      h.key(value_operands.at(next++));
    } else {
      h.word(2);
      h.text(o.literal.str());
    }
  }
  for (const auto& [name, value] : n.attrs) {
    h.text(name);
    h.text(value.str());
  }
  return h.done();
}

std::optional<Tensor> find(const Key& k) {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.values.find(k);
  if (it == s.values.end()) {
    ++s.misses;
    return std::nullopt;
  }
  ++s.hits;
  return copy_of(it->second);
}

void keep(const Key& k, const Tensor& value) {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.max_bytes == 0 || s.values.count(k)) return;
  Tensor copy = copy_of(value);
  const size_t b = bytes_of(copy);
  if (b > s.max_bytes) return;
  make_room(s, b);
  s.values.emplace(k, std::move(copy));
  s.order.push_back(k);
  s.bytes += b;
}

}  // namespace node_memo

void enable_node_memo(size_t max_bytes) {
  node_memo::Store& s = node_memo::store();
  size_t cap = std::min(max_bytes, memory_budget_bytes() / 4);
  // A worker under an address-space limit (minify --memory-limit) keeps most of it for its candidates.
  struct rlimit as {};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) cap = std::min(cap, static_cast<size_t>(as.rlim_cur / 4));
  std::lock_guard<std::mutex> lock(s.mutex);
  s.max_bytes = cap;
  node_memo::make_room(s, 0);
}

NodeMemoStats node_memo_stats() {
  node_memo::Store& s = node_memo::store();
  std::lock_guard<std::mutex> lock(s.mutex);
  return {s.hits, s.misses, s.bytes};
}

}  // namespace reprokit
