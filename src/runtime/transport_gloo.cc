// The gloo transport (runtime/transport.h): gloo's TCP device, one gloo context per set of
// processes that exchange data (made on first use, its pairs connected through the job's
// key-value store, as XLA:CPU does), gloo's allreduce / allgatherv algorithms. The only C++ in
// anvil: everything gloo throws is caught here and turned into an av_diag.
extern "C" {
#include "runtime/transport.h"
}

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gloo/allgatherv.h>
#include <gloo/alltoallv.h>
#include <gloo/allreduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace {

// gloo's rendezvous store on the job's key-value store. Values come from other processes:
// gloo checks the address bytes it reads (their size) and throws on a bad one.
class KvStore final : public gloo::rendezvous::Store {
 public:
  KvStore(const av_kv_store& kv, int64_t timeout_ms) : kv_(kv), timeout_ms_(timeout_ms) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    av_diag d;
    av_diag_init(&d);
    if (kv_.put(kv_.ctx, key.c_str(), data.data(), data.size(), &d) != AV_OK)
      throw std::runtime_error(std::string("key-value store: ") + d.msg);
  }

  std::vector<char> get(const std::string& key) override {
    av_diag d;
    av_diag_init(&d);
    char* v = nullptr;
    size_t n = 0;
    if (kv_.get(kv_.ctx, key.c_str(), timeout_ms_, &v, &n, &d) != AV_OK)
      throw std::runtime_error(std::string("key-value store: ") + d.msg);
    std::vector<char> out(v, v + n);
    free(v);
    return out;
  }

  void wait(const std::vector<std::string>& keys) override {
    for (const auto& k : keys) (void)get(k);
  }

  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override {
    wait(keys);
  }

 private:
  av_kv_store kv_;
  int64_t timeout_ms_;
};

struct c128 {
  uint64_t w[2];
};

struct GlooTransport {
  av_transport base;  // first: the C side sees an av_transport*
  int me = 0;
  int64_t timeout_ms = 0;
  std::string key_prefix;
  std::shared_ptr<gloo::transport::Device> device;
  std::unique_ptr<KvStore> store;
  std::map<std::vector<int>, std::shared_ptr<gloo::rendezvous::Context>> contexts;
};

GlooTransport* self(av_transport* t) { return reinterpret_cast<GlooTransport*>(t); }

av_code failed(av_diag* d, const char* what, const char* why) {
  // gloo reports its timeouts as IoExceptions whose text says so
  bool timeout = strstr(why, "imed out") || strstr(why, "imeout");
  return av_diag_set(d, timeout ? AV_DEADLINE_EXCEEDED : AV_UNAVAILABLE, "gloo %s: %.1500s", what,
                     why);
}

// The context of a set of processes, connected on first use (every process of the set gets
// here at the same collective).
std::shared_ptr<gloo::rendezvous::Context> context_for(GlooTransport* g, const int* procs,
                                                      int nprocs) {
  std::vector<int> key(procs, procs + nprocs);
  auto it = g->contexts.find(key);
  if (it != g->contexts.end()) return it->second;
  int rank = -1;
  for (int i = 0; i < nprocs; i++)
    if (procs[i] == g->me) rank = i;
  if (rank < 0) throw std::invalid_argument("this process is not in the exchange");
  std::string prefix = g->key_prefix + "gloo/";
  if (nprocs <= 32) {
    for (int i = 0; i < nprocs; i++) prefix += (i ? "," : "") + std::to_string(procs[i]);
  } else {  // a long set: its hash
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < nprocs; i++) h = (h ^ (uint64_t)procs[i]) * 1099511628211ull;
    prefix += "h" + std::to_string(nprocs) + "-" + std::to_string(h);
  }
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, nprocs);
  ctx->setTimeout(std::chrono::milliseconds(g->timeout_ms));
  gloo::rendezvous::PrefixStore ps(prefix, *g->store);
  ctx->connectFullMesh(ps, g->device);
  g->contexts.emplace(key, ctx);
  return ctx;
}

// A failed context is dropped: its sockets close, so the peers still waiting on it fail at
// once instead of at their timeout.
void drop(GlooTransport* g, const int* procs, int nprocs) {
  g->contexts.erase(std::vector<int>(procs, procs + nprocs));
}

template <typename T>
void set_output(gloo::AllreduceOptions& o, void* buf, size_t count) {
  o.setOutput<T>(static_cast<T*>(buf), count);
}

av_code gloo_all_reduce(av_transport* t, const int* procs, int nprocs, uint32_t tag,
                        const void* in, void* buf, size_t count, size_t elem_size,
                        av_reduce_fn fn, void* fn_ctx, av_diag* d) {
  GlooTransport* g = self(t);
  if (count == 0) return AV_OK;
  if (in != buf) memcpy(buf, in, count * elem_size);  // gloo reduces in place
  try {
    auto ctx = context_for(g, procs, nprocs);
    gloo::AllreduceOptions o(ctx);
    switch (elem_size) {
      case 1: set_output<uint8_t>(o, buf, count); break;
      case 2: set_output<uint16_t>(o, buf, count); break;
      case 4: set_output<uint32_t>(o, buf, count); break;
      case 8: set_output<uint64_t>(o, buf, count); break;
      case 16: set_output<c128>(o, buf, count); break;
      default:
        return av_diag_set(d, AV_INTERNAL, "gloo all_reduce: elements of %zu bytes", elem_size);
    }
    o.setReduceFunction([fn, fn_ctx](void* out, const void* a, const void* b, size_t n) {
      fn(fn_ctx, out, a, b, n);
    });
    o.setTag(tag);
    o.setTimeout(std::chrono::milliseconds(g->timeout_ms));
    gloo::allreduce(o);
    return AV_OK;
  } catch (const std::exception& e) {
    drop(g, procs, nprocs);
    return failed(d, "all_reduce", e.what());
  } catch (...) {
    drop(g, procs, nprocs);
    return failed(d, "all_reduce", "unknown exception");
  }
}

av_code gloo_all_gather(av_transport* t, const int* procs, int nprocs, uint32_t tag,
                        const void* in, const size_t* bytes, void* out, av_diag* d) {
  GlooTransport* g = self(t);
  size_t total = 0;
  int rank = -1;
  for (int i = 0; i < nprocs; i++) {
    total += bytes[i];
    if (procs[i] == g->me) rank = i;
  }
  if (total == 0) return AV_OK;
  if (rank < 0) return av_diag_set(d, AV_INTERNAL, "gloo all_gather: not a member");
  try {
    auto ctx = context_for(g, procs, nprocs);
    gloo::AllgathervOptions o(ctx);
    // gloo only reads the input
    o.setInput<uint8_t>(static_cast<uint8_t*>(const_cast<void*>(in)), bytes[rank]);
    o.setOutput<uint8_t>(static_cast<uint8_t*>(out), std::vector<size_t>(bytes, bytes + nprocs));
    o.setTag(tag);
    o.setTimeout(std::chrono::milliseconds(g->timeout_ms));
    gloo::allgatherv(o);
    return AV_OK;
  } catch (const std::exception& e) {
    drop(g, procs, nprocs);
    return failed(d, "all_gather", e.what());
  } catch (...) {
    drop(g, procs, nprocs);
    return failed(d, "all_gather", "unknown exception");
  }
}

av_code gloo_all_to_all(av_transport* t, const int* procs, int nprocs, uint32_t tag,
                        const void* in, const size_t* send_bytes, void* out,
                        const size_t* recv_bytes, av_diag* d) {
  GlooTransport* g = self(t);
  try {
    auto ctx = context_for(g, procs, nprocs);
    gloo::AlltoallvOptions o(ctx);
    std::vector<int64_t> sends(send_bytes, send_bytes + nprocs), recvs(recv_bytes, recv_bytes + nprocs);
    // gloo only reads the input
    o.setInput<uint8_t>(static_cast<uint8_t*>(const_cast<void*>(in)), sends);
    o.setOutput<uint8_t>(static_cast<uint8_t*>(out), recvs);
    o.setTag(tag);
    o.setTimeout(std::chrono::milliseconds(g->timeout_ms));
    gloo::alltoallv(o);
    return AV_OK;
  } catch (const std::exception& e) {
    drop(g, procs, nprocs);
    return failed(d, "all_to_all", e.what());
  } catch (...) {
    drop(g, procs, nprocs);
    return failed(d, "all_to_all", "unknown exception");
  }
}

void gloo_destroy(av_transport* t) {
  try {
    delete self(t);
  } catch (...) {
    // a destructor that throws: nothing left to do
  }
}

const av_transport_ops gloo_ops = {"gloo", gloo_all_reduce, gloo_all_gather, gloo_all_to_all,
                                   gloo_destroy};

}  // namespace

extern "C" bool av_transport_gloo_available(void) { return true; }

extern "C" av_transport* av_transport_gloo_new(const av_kv_store* kv,
                                               const av_transport_config* cfg, av_diag* d) {
  GlooTransport* g = nullptr;
  try {
    g = new GlooTransport();
    g->base.ops = &gloo_ops;
    g->me = cfg->process_index;
    g->timeout_ms = cfg->timeout_ms;
    g->key_prefix = cfg->key_prefix ? cfg->key_prefix : "anvil/";
    g->store.reset(new KvStore(*kv, cfg->timeout_ms));
    gloo::transport::tcp::attr attr;
    if (cfg->iface && *cfg->iface)
      attr.iface = cfg->iface;
    else if (cfg->hostname && *cfg->hostname)
      attr.hostname = cfg->hostname;
    g->device = gloo::transport::tcp::CreateDevice(attr);
    return &g->base;
  } catch (const std::exception& e) {
    delete g;
    av_diag_set(d, AV_UNAVAILABLE,
                "gloo: cannot open a TCP device on %s '%.200s' (set ANVIL_GLOO_HOSTNAME to an "
                "address of this host the other processes can reach, or ANVIL_GLOO_INTERFACE): "
                "%.1000s",
                cfg->iface && *cfg->iface ? "interface" : "address",
                cfg->iface && *cfg->iface ? cfg->iface
                : cfg->hostname && *cfg->hostname ? cfg->hostname
                                                  : "(this host's name)",
                e.what());
    return nullptr;
  }
}

