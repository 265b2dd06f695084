/*
 * The guest side of the guest-instruction benchmark: "mark start" or
 * "mark end" executes that marker instruction once, so that
 * bench/tcg/insn_marks.c records the guest's instruction count there.
 * Harmless without the plugin (each exchanges a register with itself).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        return 2;
    }
    if (!strcmp(argv[1], "start")) {
        __asm__ volatile(".byte 0x66, 0x87, 0xdb" ::: "memory"); /* xchg %bx,%bx */
    } else if (!strcmp(argv[1], "end")) {
        __asm__ volatile(".byte 0x66, 0x87, 0xc9" ::: "memory"); /* xchg %cx,%cx */
    } else {
        return 2;
    }
    return 0;
}
