"""Where things are: the tree, what the builds make, the guest kernels.

Every path derives from this file's own place in the tree.
"""
import re
from pathlib import Path

TOP = Path(__file__).resolve().parents[3]
LAB_SRC = TOP / 'tests' / 'lab'          # the guests' /lab (labsrc share)
BUILD = TOP / 'build'
QEMU = BUILD / 'qemu' / 'qemu-system-x86_64'
RDMACM_MUX = BUILD / 'unit' / 'contrib' / 'rdmacm-mux' / 'rdmacm-mux'

DEFAULT_KERNEL = '6.1'


def kernel_dir(kernel):
    """The set-up of a guest kernel series, as tests/lab/kernel.sh puts it:
    bookworm's 6.1 in build/lab, any other series in build/lab-SERIES."""
    if not re.fullmatch(r'[0-9]+\.[0-9]+', kernel):
        raise ValueError(f'kernel {kernel!r}: want a series such as 6.1 or 6.12')
    return BUILD / ('lab' if kernel == DEFAULT_KERNEL else f'lab-{kernel}')


def setup_hint(kernel):
    """The command that sets up KERNEL (for messages)."""
    prefix = '' if kernel == DEFAULT_KERNEL else f'LAB_KERNEL={kernel} '
    return f'{prefix}tests/lab/setup.sh'
