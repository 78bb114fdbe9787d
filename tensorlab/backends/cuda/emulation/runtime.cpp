// The CUDA emulation runtime: runs one kernel launch on the host, block after block, the threads
// of a block as cooperative fibers on the calling OS thread (a small context switch on x86-64,
// ucontext elsewhere). A fiber runs until it
// reaches a barrier (__syncthreads, a warp shuffle/vote, __syncwarp) or exits; the scheduler then
// resumes the next one, so barriers are real and shared memory behaves as on a GPU. Threads that
// exited no longer count towards a barrier (as on current GPUs); a barrier nobody can complete is
// reported as a deadlock instead of hanging. Compiled once into libtlemu-<hash>.so and loaded with
// RTLD_GLOBAL before any kernel library, which call the extern "C" functions below.
#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <sys/mman.h>
#include <ucontext.h>
#include <vector>

#ifdef TL_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

struct tl_uint3 { unsigned x, y, z; };

namespace tl_emu {
// Built-in variables: set by the scheduler before every switch into a fiber (all fibers of a
// launch run on this OS thread, so one thread_local slot per variable suffices).
thread_local tl_uint3 thread_idx, block_idx, block_dim, grid_dim;
}  // namespace tl_emu

namespace {

constexpr int kWarp = 32;
constexpr size_t kStackBytes = 256 * 1024;  // AddressSanitizer reports (symbolizing) run on it too
constexpr size_t kStackTopBytes = 8 * 1024;  // what fiber_main's own frames can occupy
constexpr size_t kSlotBytes = 16;  // the widest value a warp exchange carries

enum class Wait { none, block, warp };

#if defined(__x86_64__)
// Saves the callee-saved registers, MXCSR and the x87 control word on the current stack, stores
// the stack pointer in *save and continues on `next` (a stack saved the same way, or prepared by
// prepare_stack). No system call, unlike swapcontext (which also saves the signal mask).
extern "C" void tl_emu_switch(void** save, void* next);
asm(R"(
  .text
  .p2align 4
  .type tl_emu_switch,@function
tl_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tl_emu_switch,.-tl_emu_switch
)");
struct Context {
  void* sp = nullptr;
};
#else
struct Context {
  ucontext_t uc;
};
#endif

struct Fiber {
  Context ctx;
  char* stack = nullptr;  // mmap'd, with a PROT_NONE guard page below it
  tl_uint3 tid;
  int linear = 0;
  bool done = false;
  Wait waiting = Wait::none;
  void* fake_stack = nullptr;
};

struct WarpState {
  unsigned live = 0;        // lanes that have not exited
  unsigned round_mask = 0;  // the mask of the exchange in progress
  int count = 0;
  unsigned gen = 0;
  unsigned char slots[2][kWarp][kSlotBytes];
  unsigned arrived[2];      // lanes that deposited a value in this generation
};

struct Launch {
  void (*body)(void*) = nullptr;
  void* ctx = nullptr;
  int nthreads = 0;
  int live = 0;
  int bar_count = 0;
  unsigned bar_gen = 0;
  long long bar_acc[2] = {0, 0};
  long long bar_arrivals[2] = {0, 0};
  std::vector<WarpState> warps;
  unsigned char* dyn_shared = nullptr;
  unsigned long long progress = 0;  // barrier releases, wake-ups and exits: deadlock detection
  bool failed = false;
  bool failed_before = false;  // the previous launch on this pool was abandoned mid-kernel
  std::string error;
};

std::mutex g_launch_mutex;  // the emulated device runs one launch at a time
bool g_last_failed = false;  // guarded by g_launch_mutex
thread_local Launch* t_launch = nullptr;
thread_local Fiber* t_fiber = nullptr;
thread_local Context t_sched_ctx;
thread_local void* t_sched_fake = nullptr;
thread_local const void* t_main_bottom = nullptr;
thread_local size_t t_main_size = 0;

char g_asan_report[8192];  // the first AddressSanitizer report during a launch (no allocation in the callback)

void fail(const std::string& msg) {
  Launch* L = t_launch;
  if (L && !L->failed) {
    L->failed = true;
    L->error = msg;
  }
}

// -- fiber switching, annotated for AddressSanitizer so it knows which stack is live -----------
void fiber_main();

#if defined(__x86_64__)
inline void switch_to(Context* save, Context* next) { tl_emu_switch(&save->sp, next->sp); }

void prepare(Fiber* f) {
  // the frame tl_emu_switch pops: MXCSR/x87 control word, six registers, then "returns" into
  // fiber_main with the stack aligned as after a call
  uintptr_t top = (reinterpret_cast<uintptr_t>(f->stack) + kStackBytes) & ~uintptr_t(15);
  void** sp = reinterpret_cast<void**>(top) - 1;  // fiber_main's (zero) return address
  *sp = nullptr;
  *--sp = reinterpret_cast<void*>(&fiber_main);   // 16-aligned: rsp is 8 mod 16 at entry, as after a call
  for (int r = 0; r < 6; ++r) *--sp = nullptr;
  uint32_t* ctl = reinterpret_cast<uint32_t*>(--sp);
  ctl[0] = 0x1F80;  // MXCSR: all exceptions masked, round to nearest
  ctl[1] = 0x037F;  // x87: all exceptions masked, double extended precision
  f->ctx.sp = sp;
}
#else
inline void switch_to(Context* save, Context* next) { swapcontext(&save->uc, &next->uc); }

void prepare(Fiber* f) {
  getcontext(&f->ctx.uc);
  f->ctx.uc.uc_stack.ss_sp = f->stack;
  f->ctx.uc.uc_stack.ss_size = kStackBytes;
  f->ctx.uc.uc_link = nullptr;
  makecontext(&f->ctx.uc, fiber_main, 0);
}
#endif
void enter(Fiber* f) {
  t_fiber = f;
  tl_emu::thread_idx = f->tid;
#ifdef TL_EMU_ASAN
  __sanitizer_start_switch_fiber(&t_sched_fake, f->stack, kStackBytes);
#endif
  switch_to(&t_sched_ctx, &f->ctx);
#ifdef TL_EMU_ASAN
  __sanitizer_finish_switch_fiber(t_sched_fake, nullptr, nullptr);
#endif
  t_fiber = nullptr;
}

void leave(Fiber* f, bool final) {
#ifdef TL_EMU_ASAN
  __sanitizer_start_switch_fiber(final ? nullptr : &f->fake_stack, t_main_bottom, t_main_size);
#endif
  switch_to(&f->ctx, &t_sched_ctx);
#ifdef TL_EMU_ASAN
  __sanitizer_finish_switch_fiber(f->fake_stack, &t_main_bottom, &t_main_size);
#endif
}

[[noreturn]] void abandon(Fiber* f) {
  leave(f, true);
  std::abort();  // an abandoned fiber is never resumed
}

void wait_while(Wait kind, const unsigned* gen, unsigned mine) {
  Fiber* f = t_fiber;
  f->waiting = kind;
  while (*gen == mine) {
    leave(f, false);
    if (t_launch->failed) abandon(f);
  }
  f->waiting = Wait::none;
  ++t_launch->progress;
}

void release_block(Launch* L) {
  L->bar_count = 0;
  ++L->bar_gen;
  ++L->progress;
}

void release_warp(WarpState* w) {
  w->count = 0;
  ++w->gen;
  ++t_launch->progress;
}

int participants(const WarpState* w) { return __builtin_popcount(w->round_mask & w->live); }

void fiber_main() {
  Fiber* f = t_fiber;
#ifdef TL_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &t_main_bottom, &t_main_size);
#endif
  Launch* L = t_launch;
  L->body(L->ctx);
  // Exit: this thread no longer counts towards barriers, which may now be complete.
  f->done = true;
  --L->live;
  ++L->progress;
  if (L->bar_count > 0 && L->bar_count == L->live) release_block(L);
  WarpState* w = &L->warps[f->linear / kWarp];
  w->live &= ~(1u << (f->linear % kWarp));
  if (w->count > 0 && w->count == participants(w)) release_warp(w);
  abandon(f);
}

char* map_stack() {
  long page = 4096;
  void* p = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  mprotect(p, page, PROT_NONE);  // a kernel overflowing its stack faults instead of corrupting
  return static_cast<char*>(p) + page;
}

const char* wait_name(Wait w) { return w == Wait::block ? "__syncthreads" : "a warp barrier (shuffle/vote/__syncwarp)"; }

std::string deadlock_message(const Launch* L, const std::vector<Fiber>& pool, const tl_uint3& b) {
  std::string s = "deadlock in block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," +
                  std::to_string(b.z) + "): threads wait at barriers that can never complete:";
  int shown = 0;
  for (int i = 0; i < L->nthreads && shown < 8; ++i) {
    const Fiber& f = pool[i];
    if (!f.done) {
      s += " thread (" + std::to_string(f.tid.x) + "," + std::to_string(f.tid.y) + "," + std::to_string(f.tid.z) +
           ") waits at " + wait_name(f.waiting) + ";";
      ++shown;
    }
  }
  return s + " (a barrier inside divergent code, or a shuffle mask naming lanes that do not take part)";
}

bool run_block(Launch* L, std::vector<Fiber>& pool, const tl_uint3& bidx, bool reverse) {
  tl_emu::block_idx = bidx;
  L->live = L->nthreads;
  L->bar_count = 0;
  for (size_t w = 0; w < L->warps.size(); ++w) {
    WarpState& ws = L->warps[w];
    int lanes = std::min(kWarp, L->nthreads - int(w) * kWarp);
    ws.live = lanes == kWarp ? 0xffffffffu : ((1u << lanes) - 1u);
    ws.count = 0;
    ws.round_mask = 0;
  }
  for (int i = 0; i < L->nthreads; ++i) {
    Fiber& f = pool[i];
#ifdef TL_EMU_ASAN
    // frames that never returned (fiber_main's; every frame of a fiber abandoned by a failed
    // launch) may have left poisoned redzones behind: the next kernel on this stack must not
    // see them. Stacks are memory mapped: untouched pages cost nothing.
    size_t dirty = L->failed_before ? kStackBytes : kStackTopBytes;
    __asan_unpoison_memory_region(f.stack + kStackBytes - dirty, dirty);
#endif
    f.done = false;
    f.waiting = Wait::none;
    f.fake_stack = nullptr;
    prepare(&f);
  }
  for (;;) {
    unsigned long long before = L->progress;
    bool alive = false;
    for (int k = 0; k < L->nthreads; ++k) {
      Fiber& f = pool[reverse ? L->nthreads - 1 - k : k];
      if (f.done) continue;
      enter(&f);
      if (L->failed) return false;
      alive |= !f.done;
    }
    if (!alive) return true;
    if (L->progress == before) {
      fail(deadlock_message(L, pool, bidx));
      return false;
    }
  }
}

void format(char* err, size_t cap, const std::string& s) {
  if (cap) {
    size_t n = std::min(cap - 1, s.size());
    memcpy(err, s.data(), n);
    err[n] = 0;
  }
}

#ifdef TL_EMU_ASAN
void on_asan_report(const char* report) {
  if (!t_launch) return;  // not a kernel's access: ASan has printed it; nothing to attribute
  if (!g_asan_report[0]) {
    strncpy(g_asan_report, report, sizeof g_asan_report - 1);
    g_asan_report[sizeof g_asan_report - 1] = 0;
  }
  t_launch->failed = true;
}

struct AsanHook {
  AsanHook() { __asan_set_error_report_callback(on_asan_report); }
} g_asan_hook;
#endif

size_t pad_for(size_t n) {  // guard bytes on each side of a device buffer
  size_t p = std::min<size_t>(std::max<size_t>(n, 64), 16384);
  return (p + 63) & ~size_t(63);
}

}  // namespace

extern "C" {

// Runs a grid: returns 0, or 1 with a message in `err` (bad configuration, deadlock, trap, or an
// AddressSanitizer report of an invalid memory access made by the kernel).
int tl_emu_run_grid(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, size_t shared,
                    void (*body)(void*), void* ctx, char* err, size_t cap) {
  unsigned long long nthreads = 1ull * bx * by * bz;
  if (nthreads == 0 || nthreads > 1024 || bz > 64 || gx == 0 || gy == 0 || gz == 0 || gy > 65535 || gz > 65535) {
    format(err, cap, "invalid configuration argument: grid (" + std::to_string(gx) + "," + std::to_string(gy) + "," +
                         std::to_string(gz) + ") block (" + std::to_string(bx) + "," + std::to_string(by) + "," +
                         std::to_string(bz) + ")");
    return 1;
  }
  // The emulated device is an sm_80: 48 KiB per block by default, up to 163 KiB for a kernel that opts
  // in (cudaFuncAttributeMaxDynamicSharedMemorySize), which the CuPy driver does for every launch
  // that asks for more (cupy_driver.launch), so the opt-in limit is the one a launch meets.
  if (shared > 163 * 1024) {
    format(err, cap, "too many resources requested for launch: " + std::to_string(shared) +
                         " bytes of dynamic shared memory (the emulated sm_80 allows 163 KiB per block)");
    return 1;
  }
  std::lock_guard<std::mutex> guard(g_launch_mutex);
  static std::vector<Fiber> pool;  // stacks survive across launches; guarded by g_launch_mutex
  while (pool.size() < nthreads) {
    pool.emplace_back();
    pool.back().stack = map_stack();
    if (!pool.back().stack) {
      pool.pop_back();
      format(err, cap, "could not map fiber stacks for " + std::to_string(nthreads) + " threads");
      return 1;
    }
  }
  Launch L;
  L.failed_before = g_last_failed;
  L.body = body;
  L.ctx = ctx;
  L.nthreads = int(nthreads);
  L.warps.resize((nthreads + kWarp - 1) / kWarp);
  for (int i = 0; i < L.nthreads; ++i) {
    Fiber& f = pool[i];
    f.linear = i;
    f.tid = {unsigned(i % bx), unsigned(i / bx % by), unsigned(i / (bx * by))};
  }
  std::vector<unsigned char> dyn(shared + 1);
  L.dyn_shared = dyn.data();
  tl_emu::block_dim = {bx, by, bz};
  tl_emu::grid_dim = {gx, gy, gz};
  t_launch = &L;
  g_asan_report[0] = 0;
  bool ok = true;
  unsigned long long nblock = 0;
  for (unsigned z = 0; z < gz && ok; ++z)
    for (unsigned y = 0; y < gy && ok; ++y)
      for (unsigned x = 0; x < gx && ok; ++x) {
        memset(dyn.data(), 0xA5, shared);  // shared memory starts as garbage, as on a GPU
        ok = run_block(&L, pool, {x, y, z}, (nblock++ & 1) != 0);
      }
  t_launch = nullptr;
  g_last_failed = !ok || L.failed;
  if (!ok || L.failed) {
    std::string msg = L.error;
    if (g_asan_report[0]) msg = std::string("invalid memory access (AddressSanitizer):\n") + g_asan_report;
    if (msg.empty()) msg = "kernel failed";
    format(err, cap, msg);
    return 1;
  }
  return 0;
}

// A block barrier that also counts the threads passing a non-zero value (__syncthreads_count,
// _and, _or); plain __syncthreads passes 0. The tallies are double-buffered by generation: a
// thread can reach the next barrier before the others have read this one's result.
static void block_barrier(int value, long long* nonzero, long long* arrivals) {
  Launch* L = t_launch;
  unsigned gen = L->bar_gen;
  int p = gen & 1;
  if (L->bar_count == 0) L->bar_acc[p] = 0;
  L->bar_acc[p] += value != 0;
  L->bar_arrivals[p] = ++L->bar_count;
  if (L->bar_count == L->live) {
    release_block(L);
  } else {
    wait_while(Wait::block, &L->bar_gen, gen);
  }
  *nonzero = L->bar_acc[p];
  *arrivals = L->bar_arrivals[p];
}

void tl_emu_syncthreads(void) {
  long long n, a;
  block_barrier(0, &n, &a);
}

int tl_emu_syncthreads_count(int pred) {
  long long n, a;
  block_barrier(pred, &n, &a);
  return int(n);
}

int tl_emu_syncthreads_and(int pred) {
  long long n, a;
  block_barrier(pred, &n, &a);
  return n == a;
}

int tl_emu_syncthreads_or(int pred) {
  long long n, a;
  block_barrier(pred, &n, &a);
  return n > 0;
}

int tl_emu_lane(void) { return t_fiber->linear % kWarp; }

// Every participating lane deposits `size` bytes; after the warp barrier `all` holds the 32
// slots (lanes that did not take part keep zeros). Returns the mask of lanes that took part.
unsigned tl_emu_warp_gather(const void* mine, unsigned size, unsigned mask, void* all) {
  Launch* L = t_launch;
  Fiber* f = t_fiber;
  int lane = f->linear % kWarp;
  WarpState* w = &L->warps[f->linear / kWarp];
  if (size > kSlotBytes) {
    fail("warp exchange of a value wider than 16 bytes");
    abandon(f);
  }
  if (!(mask & (1u << lane))) {
    fail("a warp shuffle/vote was called by lane " + std::to_string(lane) +
         " with a mask that does not include it (undefined behaviour on a GPU)");
    abandon(f);
  }
  unsigned gen = w->gen;
  int p = gen & 1;
  if (w->count == 0) {
    w->round_mask = mask;
    w->arrived[p] = 0;
  }
  memcpy(w->slots[p][lane], mine, size);
  w->arrived[p] |= 1u << lane;
  ++w->count;
  if (w->count == participants(w)) {
    release_warp(w);
  } else {
    wait_while(Wait::warp, &w->gen, gen);
  }
  unsigned took_part = w->arrived[p];
  unsigned char* out = static_cast<unsigned char*>(all);
  for (int l = 0; l < kWarp; ++l) {
    if (took_part & (1u << l)) memcpy(out + l * size, w->slots[p][l], size);
    else memset(out + l * size, 0, size);
  }
  return took_part;
}

unsigned tl_emu_warp_live(void) {
  return t_launch->warps[t_fiber->linear / kWarp].live;
}

void* tl_emu_dynamic_shared(void) { return t_launch->dyn_shared; }

[[noreturn]] void tl_emu_trap(const char* what) {
  fail(what ? what : "__trap() called");
  abandon(t_fiber);
}

void tl_emu_assert_fail(const char* expr, const char* file, int line) {
  char buf[512];
  snprintf(buf, sizeof buf, "device-side assertion `%s` failed at %s:%d (block (%u,%u,%u), thread (%u,%u,%u))", expr,
           file, line, tl_emu::block_idx.x, tl_emu::block_idx.y, tl_emu::block_idx.z, tl_emu::thread_idx.x,
           tl_emu::thread_idx.y, tl_emu::thread_idx.z);
  tl_emu_trap(buf);
}

// Device buffers: host memory with guard bytes on both sides that AddressSanitizer treats as
// out of bounds, so a kernel running a little past a buffer is reported and writes only the guard.
void* tl_emu_malloc(size_t n) {
  size_t pad = pad_for(n);
  char* base = static_cast<char*>(malloc(n + 2 * pad));
  if (!base) return nullptr;
#ifdef TL_EMU_ASAN
  __asan_poison_memory_region(base, pad);
  __asan_poison_memory_region(base + pad + n, pad);
#endif
  return base + pad;
}

void tl_emu_free(void* p, size_t n) {
  if (!p) return;
  char* base = static_cast<char*>(p) - pad_for(n);
#ifdef TL_EMU_ASAN
  __asan_unpoison_memory_region(base, n + 2 * pad_for(n));
#endif
  free(base);
}

int tl_emu_asan(void) {
#ifdef TL_EMU_ASAN
  return 1;
#else
  return 0;
#endif
}

}  // extern "C"
