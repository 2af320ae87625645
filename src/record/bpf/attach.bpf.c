// SPDX-License-Identifier: MIT OR Apache-2.0
//
// kbxscope's eBPF event source for `record`: the system calls the
// interposer counts, seen from the kernel, for processes that already run
// (daemons, systemd's too) and statically linked programs.
//
// Probe points: the raw tracepoints `sys_enter` and `sys_exit` (x86-64
// system call numbers), and `sched_process_fork`/`sched_process_exec`.
// fentry/fexit (BPF trampolines on the `__x64_sys_*` functions, which only
// those calls would pay) need the kernel's tracing program type, and
// kprobes need CONFIG_KPROBES: the kernels here have neither. Raw
// tracepoints are the cheapest point left: while attached, every system
// call of every process takes the kernel's traced path and runs two short
// programs that stop at an inlined array lookup of the call's number (for
// the calls not counted) or one hash lookup of the process (for processes
// not watched); the per-call syscall tracepoints that bpftrace uses add the
// perf event machinery on top of the same path.
//
// In the kernel: processes filtered by tgid (`pids`), files by their base
// name (`patterns`: exact, or `*SUFFIX`), descriptors mapped to
// files (`fds`, filled by open/dup/fcntl, carried into a fork's child,
// emptied by close/close_range, and filled by user space from
// /proc/PID/fd at attach), and per process, file and operation a cell of
// counts, bytes, time and log2 histograms (`cells`), the layout of
// kbx-record's cells. Per-call events go through `events` (a ring buffer)
// only when `trace_events` is set; those that find it full are counted.
//
// Built by `.ci/bpf.sh` (clang -target bpf); the object is committed next to
// this file and CI checks that it is what this source compiles to.

#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define PATH_LEN 256
#define NAME_LEN 64
#define PATTERNS 16
#define LAT_BUCKETS 32
#define SIZE_BUCKETS 32

#define AT_EMPTY_PATH 0x1000
#define F_DUPFD 0
#define F_GETLK 5
#define F_SETLK 6
#define F_SETLKW 7
#define F_DUPFD_CLOEXEC 1030
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#define F_OFD_SETLKW 38
#define CLOSE_RANGE_CLOEXEC (1U << 2)
// Descriptors below this are carried into a fork's child and closed by
// close_range (one lookup each: GnuPG's processes hold a few dozen).
#define FD_SCAN 1024

// Operation columns (src/record/kernel.rs names them, in this order).
enum op {
	OP_OPEN, OP_OPENAT, OP_CREAT, OP_CLOSE, OP_READ, OP_PREAD64, OP_READV,
	OP_PREADV, OP_PREADV2, OP_WRITE, OP_PWRITE64, OP_WRITEV, OP_PWRITEV,
	OP_LSEEK, OP_FSTAT, OP_NEWFSTATAT, OP_STATX, OP_STAT, OP_LSTAT,
	OP_MMAP, OP_DUP, OP_DUP2, OP_DUP3, OP_FCNTL_DUP, OP_FCNTL_LOCK,
	OP_FTRUNCATE, OP_FSYNC, OP_FDATASYNC, OP_ACCESS, OP_FACCESSAT,
	OP_FACCESSAT2, OP_RENAME, OP_RENAMEAT, OP_RENAMEAT2, OP_UNLINK,
	OP_UNLINKAT, OP_LINK, OP_LINKAT, OP_CLOSE_RANGE, OP_OPENAT2,
	OPS,
};

// Set by the loader before the program is loaded.
const volatile __u32 trace_events = 0;

struct fd_key {
	__u32 tgid;
	__s32 fd;
};

struct cell_key {
	__u32 tgid;
	__u32 file;
	__u32 op;
	__u32 pad;
};

struct cell {
	__u64 count;
	__u64 errors;
	__u64 bytes;
	__u64 total_ns;
	__u64 lat[LAT_BUCKETS];
	__u64 size[SIZE_BUCKETS];
};

struct path_key {
	char path[PATH_LEN];
};

struct name_key {
	char name[NAME_LEN];
};

struct pattern {
	__u32 len;
	__u32 suffix;
	char s[NAME_LEN];
};

struct event {
	__u32 tgid;
	__u32 tid;
	__u32 op;
	__u32 file;
	__u64 start_ns;
	__u64 dur_ns;
	__s64 fd;
	__s64 offset;
	__s64 result;
};

// Lost counters: 0 no file id (paths full), 1 no descriptor entry (fds
// full), 2 no cell (cells full), 3 events (ring buffer full).
#define LOST_FILES 0
#define LOST_FDS 1
#define LOST_CELLS 2
#define LOST_EVENTS 3

// Watched processes, one bit per tgid (pid_max is at most 2^22): an array
// lookup the JIT inlines, all that a process not watched pays per call.
#define PID_WORDS (1 << 16)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PID_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} pidbits SEC(".maps");

// Watched processes: tgid -> flags (1: its children are watched too).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} pids SEC(".maps");

// Watched file names: base names, or `*SUFFIX` patterns (`suffix` set),
// in the first entries (an entry with `len` 0 ends the list).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PATTERNS);
	__type(key, __u32);
	__type(value, struct pattern);
} patterns SEC(".maps");

// Each watched process's parent and program, from its fork or exec (a
// process that has exited is still named).
struct proc {
	__u32 ppid;
	__u32 pad;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct proc);
} procs SEC(".maps");

// Programs whose processes are watched from their exec on (by comm).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, struct name_key);
	__type(value, __u32);
} comms SEC(".maps");

// File ids by path as the program gave it (index 0 of `next_file` counts them).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct path_key);
	__type(value, __u32);
} paths SEC(".maps");

// The next file id the kernel gives (entry 0).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

#define NEXT_FILE 0

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct fd_key);
	__type(value, __u32);
} fds SEC(".maps");

// Per CPU: a call is counted with plain additions to this CPU's copy (the
// program is not preempted on its CPU), no locked instruction; kbxscope
// adds the CPUs' copies up. Allocated as cells appear (a preallocated map
// would take every CPU's copy of every entry at load).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, struct cell_key);
	__type(value, struct cell);
} cells SEC(".maps");

// The call each watched thread is in, from sys_enter to sys_exit (`start`
// 0: none). An LRU map: the entries of threads that have ended go first.
struct call {
	__u64 start;
	__u32 op;
	__u32 pad;
	__u64 a[5];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct call);
} starts SEC(".maps");

// struct pt_regs from r10 to di: the system call's arguments but the last.
struct regs_args {
	unsigned long r10, r9, r8, ax, cx, dx, si, di;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

// Scratch for a path (too large for the 512-byte stack).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct path_key);
} scratch SEC(".maps");

static __always_inline void count_lost(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &which);
	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline int watched(__u32 tgid)
{
	__u32 i = tgid >> 6;
	__u64 *w = bpf_map_lookup_elem(&pidbits, &i);
	return w && ((*w >> (tgid & 63)) & 1);
}

// Watch process `tgid` with `flags`.
static __always_inline void watch(__u32 tgid, __u32 flags)
{
	bpf_map_update_elem(&pids, &tgid, &flags, BPF_ANY);
	__u32 i = tgid >> 6;
	__u64 *w = bpf_map_lookup_elem(&pidbits, &i);
	if (w)
		__sync_fetch_and_or(w, 1ULL << (tgid & 63));
}

static __always_inline __u32 log2_bucket(__u64 v)
{
	__u32 b = 0;
	if (v >> 32) { v >>= 32; b += 32; }
	if (v >> 16) { v >>= 16; b += 16; }
	if (v >> 8) { v >>= 8; b += 8; }
	if (v >> 4) { v >>= 4; b += 4; }
	if (v >> 2) { v >>= 2; b += 2; }
	if (v >> 1) { b += 1; }
	return b;
}

static __always_inline __u32 lat_bucket(__u64 ns)
{
	__u32 b = ns <= 1 ? 0 : log2_bucket(ns);
	return b >= LAT_BUCKETS ? LAT_BUCKETS - 1 : b;
}

static __always_inline __u32 size_bucket(__u64 bytes)
{
	__u32 b = bytes == 0 ? 0 : log2_bucket(bytes) + 1;
	return b >= SIZE_BUCKETS ? SIZE_BUCKETS - 1 : b;
}

// Count one call on file `file` by thread `id` (tgid << 32 | tid).
static __always_inline void account(__u64 id, __u32 op, __u32 file, __u64 start, long ret,
				    __u64 bytes, int is_size, __s64 fd, __s64 offset)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 dur = now > start ? now - start : 0;
	struct cell_key key = { .tgid = id >> 32, .file = file, .op = op };
	struct cell *c = bpf_map_lookup_elem(&cells, &key);
	if (!c) {
		static const struct cell zero;
		bpf_map_update_elem(&cells, &key, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&cells, &key);
		if (!c) {
			count_lost(LOST_CELLS);
			return;
		}
	}
	c->count += 1;
	if (ret < 0)
		c->errors += 1;
	c->bytes += bytes;
	c->total_ns += dur;
	__u32 lb = lat_bucket(dur);
	if (lb < LAT_BUCKETS)
		c->lat[lb] += 1;
	if (is_size) {
		__u32 sb = size_bucket(bytes);
		if (sb < SIZE_BUCKETS)
			c->size[sb] += 1;
	}
	if (trace_events) {
		struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
		if (!e) {
			count_lost(LOST_EVENTS);
			return;
		}
		e->tgid = id >> 32;
		e->tid = (__u32)id;
		e->op = op;
		e->file = file;
		e->start_ns = start;
		e->dur_ns = dur;
		e->fd = fd;
		e->offset = offset;
		e->result = ret;
		bpf_ringbuf_submit(e, 0);
	}
}

// The file id of process `tgid`'s descriptor `fd` if it is watched, or -1.
static __always_inline __s64 fd_file(__u32 tgid, __s32 fd)
{
	struct fd_key k = { .tgid = tgid, .fd = fd };
	__u32 *f = bpf_map_lookup_elem(&fds, &k);
	return f ? (__s64)*f : -1;
}

// Whether path `p` (`len` bytes) names a watched file: its base name is
// one of `patterns` (exact), or ends with one (`*SUFFIX`). Compared from
// the end of the path, each pattern in one bounded loop (a scan for the
// last '/' would make the verifier follow every position it can stop at).
static __always_inline int name_watched(struct path_key *p, __u32 len)
{
	for (__u32 k = 0; k < PATTERNS; k++) {
		__u32 key = k;
		struct pattern *pt = bpf_map_lookup_elem(&patterns, &key);
		if (!pt || pt->len == 0)
			break;
		__u32 n = pt->len;
		if (n > len || n >= NAME_LEN)
			continue;
		__u32 from = len - n;
		int ok = 1;
		for (__u32 i = 0; i < NAME_LEN; i++) {
			if (i >= n)
				break;
			__u32 j = from + i;
			if (j >= PATH_LEN || p->path[j] != pt->s[i & (NAME_LEN - 1)]) {
				ok = 0;
				break;
			}
		}
		if (!ok)
			continue;
		if (pt->suffix || from == 0)
			return 1;
		__u32 slash = from - 1;
		if (slash < PATH_LEN && p->path[slash] == '/')
			return 1;
	}
	return 0;
}

// The file id of a watched user-space path (made on first sight), or -1.
static __always_inline __s64 path_file(const char *upath)
{
	__u32 zero = 0;
	struct path_key *p = bpf_map_lookup_elem(&scratch, &zero);
	if (!p || !upath)
		return -1;
	for (__u32 i = 0; i < PATH_LEN / 8; i++)
		((__u64 *)p->path)[i] = 0;
	long n = bpf_probe_read_user_str(p->path, PATH_LEN, upath);
	if (n <= 1)
		return -1;
	if (!name_watched(p, (__u32)(n - 1) & (PATH_LEN - 1)))
		return -1;
	__u32 *f = bpf_map_lookup_elem(&paths, p);
	if (f)
		return *f;
	__u32 nf = NEXT_FILE;
	__u64 *next = bpf_map_lookup_elem(&counters, &nf);
	if (!next)
		return -1;
	__u32 id = __sync_fetch_and_add(next, 1);
	if (bpf_map_update_elem(&paths, p, &id, BPF_NOEXIST)) {
		f = bpf_map_lookup_elem(&paths, p);
		if (f)
			return *f;
		count_lost(LOST_FILES);
		return -1;
	}
	return id;
}

static __always_inline void remember_fd(__u32 tgid, __s32 fd, __u32 file)
{
	struct fd_key k = { .tgid = tgid, .fd = fd };
	if (bpf_map_update_elem(&fds, &k, &file, BPF_ANY))
		count_lost(LOST_FDS);
}

static __always_inline void forget_fd(__u32 tgid, __s32 fd)
{
	struct fd_key k = { .tgid = tgid, .fd = fd };
	bpf_map_delete_elem(&fds, &k);
}

// close_range's closing of one descriptor (bpf_loop's callback, index =
// descriptor - first): counted as a close of its file, as the interposer
// counts it, and forgotten.
struct range_close {
	__u64 id;
	__u64 start;
	__u32 first;
};

static long close_one(__u32 i, struct range_close *r)
{
	__u32 fd = r->first + i;
	struct fd_key k = { .tgid = r->id >> 32, .fd = fd };
	__u32 *f = bpf_map_lookup_elem(&fds, &k);
	if (!f)
		return 0;
	account(r->id, OP_CLOSE_RANGE, *f, r->start, 0, 0, 0, fd, -1);
	bpf_map_delete_elem(&fds, &k);
	return 0;
}

// A fork's child holds its parent's descriptors (bpf_loop's callback,
// index = descriptor).
struct inherit {
	__u32 parent;
	__u32 child;
};

static long inherit_one(__u32 fd, struct inherit *h)
{
	struct fd_key k = { .tgid = h->parent, .fd = fd };
	__u32 *f = bpf_map_lookup_elem(&fds, &k);
	if (f)
		remember_fd(h->child, fd, *f);
	return 0;
}

// x86-64 system call number -> operation + 1 (0: not counted).
#define NR_MAX 448
static const __u8 sysop[NR_MAX] = {
	[0] = OP_READ + 1,	   [1] = OP_WRITE + 1,	     [2] = OP_OPEN + 1,
	[3] = OP_CLOSE + 1,	   [4] = OP_STAT + 1,	     [5] = OP_FSTAT + 1,
	[6] = OP_LSTAT + 1,	   [8] = OP_LSEEK + 1,	     [9] = OP_MMAP + 1,
	[17] = OP_PREAD64 + 1,	   [18] = OP_PWRITE64 + 1,   [19] = OP_READV + 1,
	[20] = OP_WRITEV + 1,	   [21] = OP_ACCESS + 1,     [32] = OP_DUP + 1,
	[33] = OP_DUP2 + 1,	   [72] = OP_FCNTL_LOCK + 1, [74] = OP_FSYNC + 1,
	[75] = OP_FDATASYNC + 1,   [77] = OP_FTRUNCATE + 1,  [82] = OP_RENAME + 1,
	[85] = OP_CREAT + 1,	   [86] = OP_LINK + 1,	     [87] = OP_UNLINK + 1,
	[257] = OP_OPENAT + 1,	   [262] = OP_NEWFSTATAT + 1, [263] = OP_UNLINKAT + 1,
	[264] = OP_RENAMEAT + 1,   [265] = OP_LINKAT + 1,    [269] = OP_FACCESSAT + 1,
	[292] = OP_DUP3 + 1,	   [295] = OP_PREADV + 1,    [296] = OP_PWRITEV + 1,
	[316] = OP_RENAMEAT2 + 1,  [327] = OP_PREADV2 + 1,   [332] = OP_STATX + 1,
	[436] = OP_CLOSE_RANGE + 1, [437] = OP_OPENAT2 + 1,   [439] = OP_FACCESSAT2 + 1,
};

// The operation + 1 of system call `nr` if it is counted and process
// `tgid` watched, else 0: all that a call not counted pays.
static __always_inline __u8 counted(long nr, __u32 tgid)
{
	if (nr < 0 || nr >= NR_MAX)
		return 0;
	__u8 op = sysop[nr];
	return op && watched(tgid) ? op : 0;
}

// A counted call of thread `tid` begins (`op` from `counted`): remember it.
static __always_inline int enter(__u32 tid, __u8 op, __u64 a0, __u64 a1, __u64 a2, __u64 a3, __u64 a4)
{
	// The entry of this thread is written in place (a hash update would
	// take a new element each call).
	struct call *c = bpf_map_lookup_elem(&starts, &tid);
	if (!c) {
		static const struct call fresh;
		bpf_map_update_elem(&starts, &tid, &fresh, BPF_ANY);
		c = bpf_map_lookup_elem(&starts, &tid);
		if (!c)
			return 0;
	}
	c->op = op - 1;
	c->a[0] = a0;
	c->a[1] = a1;
	c->a[2] = a2;
	c->a[3] = a3;
	c->a[4] = a4;
	c->start = bpf_ktime_get_ns();
	return 0;
}

// The raw tracepoint: every system call; the arguments from struct
// pt_regs in one read (r10 to di), only for the calls counted.
SEC("raw_tp/sys_enter")
int sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u8 op = counted(ctx->args[1], id >> 32);
	if (!op)
		return 0;
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
	struct regs_args r;
	if (bpf_probe_read_kernel(&r, sizeof(r), &regs->r10))
		return 0;
	return enter((__u32)id, op, r.di, r.si, r.dx, r.r10, r.r8);
}

// The syscall tracepoints' records (the format files in
// events/syscalls/sys_enter_*/ and sys_exit_*/).
struct syscall_enter {
	__u64 common;
	int nr;
	int pad;
	__u64 args[6];
};

struct syscall_exit {
	__u64 common;
	int nr;
	int pad;
	long ret;
};

// The same, attached to each counted call's own tracepoint
// (`KBXSCOPE_ATTACH_PROBES=syscalls`, for the benchmark): other calls pay
// nothing, the counted ones the perf event's record.
SEC("tracepoint/syscalls/sys_enter_read")
int tp_enter(struct syscall_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u8 op = counted(ctx->nr, id >> 32);
	if (!op)
		return 0;
	// The arguments copied, not read in place: one program serves calls of
	// one to six arguments, and the kernel refuses a program whose direct
	// reads pass the end of the shortest record (close's).
	struct syscall_enter e;
	if (bpf_probe_read_kernel(&e, sizeof(e), ctx))
		return 0;
	return enter((__u32)id, op, e.args[0], e.args[1], e.args[2], e.args[3], e.args[4]);
}

// How an operation finds its file.
enum kind { K_FD, K_OPEN, K_PATH, K_AT };

// A call ends: count it if it was on a watched file.
static __always_inline int leave(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	if (!watched(tgid))
		return 0;
	__u32 tid = (__u32)id;
	struct call *cp = bpf_map_lookup_elem(&starts, &tid);
	if (!cp || !cp->start)
		return 0;
	struct call c = *cp;
	cp->start = 0;

	// Which argument names the file (a descriptor or a path), and which is an offset.
	enum kind kind = K_FD;
	__u32 arg = 0;
	__s64 offset = -1;
	__u64 bytes = 0;
	int is_size = 0;
	switch (c.op) {
	case OP_READ: case OP_READV:
		is_size = 1;
		bytes = ret > 0 ? ret : 0;
		break;
	case OP_PREAD64: case OP_PREADV: case OP_PREADV2:
		is_size = 1;
		bytes = ret > 0 ? ret : 0;
		offset = c.a[3];
		break;
	case OP_WRITE: case OP_WRITEV:
		bytes = ret > 0 ? ret : 0;
		break;
	case OP_PWRITE64: case OP_PWRITEV:
		bytes = ret > 0 ? ret : 0;
		offset = c.a[3];
		break;
	case OP_LSEEK: case OP_FTRUNCATE:
		offset = c.a[1];
		break;
	case OP_MMAP:
		arg = 4;
		bytes = (ret >= 0 || ret < -4095) ? c.a[1] : 0;
		break;
	case OP_OPEN: case OP_CREAT:
		kind = K_OPEN;
		break;
	case OP_OPENAT: case OP_OPENAT2:
		kind = K_OPEN;
		arg = 1;
		break;
	case OP_STAT: case OP_LSTAT: case OP_ACCESS: case OP_RENAME: case OP_UNLINK:
		kind = K_PATH;
		break;
	case OP_FACCESSAT: case OP_FACCESSAT2: case OP_RENAMEAT: case OP_RENAMEAT2: case OP_UNLINKAT:
		kind = K_PATH;
		arg = 1;
		break;
	case OP_LINK:
		kind = K_PATH;
		arg = 1;
		break;
	case OP_LINKAT:
		kind = K_PATH;
		arg = 3;
		break;
	case OP_NEWFSTATAT:
		kind = K_AT;
		arg = 3;
		break;
	case OP_STATX:
		kind = K_AT;
		arg = 2;
		break;
	case OP_CLOSE_RANGE: {
		__u32 first = c.a[0], last = c.a[1] < FD_SCAN ? c.a[1] : FD_SCAN - 1;
		if (ret != 0 || (c.a[2] & CLOSE_RANGE_CLOEXEC) || first > last)
			return 0;
		struct range_close r = { .id = id, .start = c.start, .first = first };
		bpf_loop(last - first + 1, close_one, &r, 0);
		return 0;
	}
	case OP_FCNTL_LOCK: {
		__u32 cmd = c.a[1];
		if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
			c.op = OP_FCNTL_DUP;
		else if (!(cmd == F_GETLK || cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_GETLK ||
			   cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW))
			return 0;
		break;
	}
	default:
		break;
	}
	if (arg > 4)
		return 0;
	__u64 value = c.a[arg];

	__s64 file;
	__s64 fd = -1;
	if (kind == K_AT) {
		char first = 0;
		if (c.a[1])
			bpf_probe_read_user(&first, 1, (const void *)c.a[1]);
		if (((__u32)value & AT_EMPTY_PATH) && first == 0) {
			kind = K_FD;
			value = c.a[0];
		} else {
			value = c.a[1];
		}
	}
	if (kind == K_FD) {
		fd = (__s32)value;
		file = fd_file(tgid, fd);
	} else {
		file = path_file((const char *)value);
		if (kind == K_OPEN)
			fd = ret;
	}
	// A descriptor a call makes on a file not watched is not on the file
	// its number was (dup2/dup3 replace one; an open or dup may reuse one
	// closed where it could not be seen, by an exec's close-on-exec). On a
	// watched file, remember_fd below puts it there.
	int makes_fd = kind == K_OPEN || c.op == OP_DUP || c.op == OP_DUP2 || c.op == OP_DUP3 ||
		       c.op == OP_FCNTL_DUP;
	if (file < 0) {
		if (makes_fd && ret >= 0)
			forget_fd(tgid, (__s32)ret);
		return 0;
	}
	account(id, c.op, file, c.start, ret, bytes, is_size, fd, offset);
	if (makes_fd && ret >= 0)
		remember_fd(tgid, (__s32)ret, file);
	else if (c.op == OP_CLOSE)
		forget_fd(tgid, fd);
	return 0;
}

SEC("raw_tp/sys_exit")
int sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	return leave(ctx->args[1]);
}

SEC("tracepoint/syscalls/sys_exit_read")
int tp_exit(struct syscall_exit *ctx)
{
	return leave(ctx->ret);
}

// A watched process's children are watched from their fork on, when the
// parent's flags say so (kbxscope itself, for a statically linked PROGRAM
// it starts); a program named in `comms` from its exec on (a daemon
// started while a PROGRAM is recorded, by it or by systemd).
SEC("raw_tp/sched_process_fork")
int on_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx->args[0];
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	if (ptgid == ctgid)
		return 0;
	if (!watched(ptgid))
		return 0;
	__u32 *flags = bpf_map_lookup_elem(&pids, &ptgid);
	if (!flags || !(*flags & 1))
		return 0;
	watch(ctgid, *flags);
	struct inherit h = { .parent = ptgid, .child = ctgid };
	bpf_loop(FD_SCAN, inherit_one, &h, 0);
	struct proc p = { .ppid = ptgid };
	bpf_get_current_comm(p.comm, sizeof(p.comm));
	bpf_map_update_elem(&procs, &ctgid, &p, BPF_ANY);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int on_exec(struct bpf_raw_tracepoint_args *ctx)
{
	struct name_key n = {};
	bpf_get_current_comm(n.name, 16);
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 *want = bpf_map_lookup_elem(&comms, &n);
	if (want) {
		watch(tgid, *want);
	} else if (!watched(tgid)) {
		return 0;
	}
	struct task_struct *task = (struct task_struct *)ctx->args[0];
	struct proc p = { .ppid = BPF_CORE_READ(task, real_parent, tgid) };
	__builtin_memcpy(p.comm, n.name, sizeof(p.comm));
	bpf_map_update_elem(&procs, &tgid, &p, BPF_ANY);
	return 0;
}
