# The lab's guest kernel, from LAB_KERNEL (sourced by setup.sh; vrdma_lab/paths.py knows the same directories):
#   unset, "" or 6.1  linux-image-amd64 of the default release (bookworm), in build/lab
#   6.12              linux-image-amd64 of bookworm-backports, in build/lab-6.12
# LAB_KERNEL_RELEASE overrides the apt target release of a non-default series;
# LAB_BUILD overrides the directory.  Sets LAB, LAB_KSERIES, LAB_KREL.
# shellcheck shell=bash
case ${LAB_KERNEL:-6.1} in
6.1) LAB_KSERIES=6.1 LAB_KREL= ;;
[0-9]*.[0-9]*) LAB_KSERIES=$LAB_KERNEL LAB_KREL=${LAB_KERNEL_RELEASE:-bookworm-backports} ;;
*) echo "lab: LAB_KERNEL=$LAB_KERNEL: want a series such as 6.1 or 6.12" >&2; exit 1 ;;
esac
if [ "$LAB_KSERIES" = 6.1 ]; then
    LAB=${LAB_BUILD:-$top/build/lab}
else
    LAB=${LAB_BUILD:-$top/build/lab-$LAB_KSERIES}
fi
