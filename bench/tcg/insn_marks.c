/*
 * A TCG plugin for the guest-instruction benchmark (bench/guest_insns.py):
 * counts the instructions a guest executes, on all its vCPUs, kernel and
 * user alike, and each time a guest program executes a marker
 * instruction (mark.c: xchg %bx,%bx, the Bochs "magic breakpoint", for a
 * window's start, xchg %cx,%cx for its end; no compiler emits either)
 * appends the count so far to a file:
 *
 *   -plugin insn_marks.so,out=FILE     lines "start|end VCPU TOTAL"
 *
 * The difference between an end and the start before it is what the
 * guest executed between them.  Counting is per translation block, added when the block starts
 * (inline, per vCPU): a block cut short by an exception or an interrupt
 * still counts whole, the same for every device under comparison.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MARKER_LEN 3
static const struct {
    uint8_t bytes[MARKER_LEN];
    const char *name;
} markers[] = {
    { { 0x66, 0x87, 0xdb }, "start" },   /* xchg %bx,%bx */
    { { 0x66, 0x87, 0xc9 }, "end" },     /* xchg %cx,%cx */
};

static struct qemu_plugin_scoreboard *board;
static qemu_plugin_u64 insns;
static FILE *out;
static GMutex out_lock;

static void on_mark(unsigned int vcpu, void *name)
{
    uint64_t total = qemu_plugin_u64_sum(insns);

    g_mutex_lock(&out_lock);
    fprintf(out, "%s %u %" PRIu64 "\n", (const char *)name, vcpu, total);
    fflush(out);
    g_mutex_unlock(&out_lock);
}

/* The marker's name, or NULL when INSN is none. */
static const char *marker_of(const struct qemu_plugin_insn *insn)
{
    uint8_t b[MARKER_LEN];

    if (qemu_plugin_insn_size(insn) != MARKER_LEN ||
        qemu_plugin_insn_data(insn, b, MARKER_LEN) != MARKER_LEN) {
        return NULL;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(markers); i++) {
        if (!memcmp(b, markers[i].bytes, MARKER_LEN)) {
            return markers[i].name;
        }
    }
    return NULL;
}

static void on_tb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);

    qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(
        tb, QEMU_PLUGIN_INLINE_ADD_U64, insns, n);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        const char *name = marker_of(insn);

        if (name) {
            qemu_plugin_register_vcpu_insn_exec_cb(
                insn, on_mark, QEMU_PLUGIN_CB_NO_REGS, (void *)name);
        }
    }
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    g_mutex_lock(&out_lock);
    fprintf(out, "exit %" PRIu64 "\n", qemu_plugin_u64_sum(insns));
    fclose(out);
    out = NULL;
    g_mutex_unlock(&out_lock);
    qemu_plugin_scoreboard_free(board);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
                                           const qemu_info_t *info,
                                           int argc, char **argv)
{
    const char *path = NULL;

    for (int i = 0; i < argc; i++) {
        if (g_str_has_prefix(argv[i], "out=")) {
            path = argv[i] + strlen("out=");
        } else {
            fprintf(stderr, "insn_marks: unknown option %s\n", argv[i]);
            return -1;
        }
    }
    if (!path || !info->system_emulation) {
        fprintf(stderr, "insn_marks: needs out=FILE and a system emulator\n");
        return -1;
    }
    out = fopen(path, "w");
    if (!out) {
        fprintf(stderr, "insn_marks: %s: %s\n", path, g_strerror(errno));
        return -1;
    }
    board = qemu_plugin_scoreboard_new(sizeof(uint64_t));
    insns = qemu_plugin_scoreboard_u64(board);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
