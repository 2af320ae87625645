/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The few kernel types attach.bpf.c reads, declared for CO-RE: the loader
 * relocates every field access against the running kernel's BTF
 * (/sys/kernel/btf/vmlinux), so no vmlinux.h of one kernel is needed.
 */
#ifndef KBXSCOPE_VMLINUX_MIN_H
#define KBXSCOPE_VMLINUX_MIN_H

#include <linux/types.h>
#include <linux/bpf.h>

struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	struct task_struct *real_parent;
} __attribute__((preserve_access_index));

#endif
