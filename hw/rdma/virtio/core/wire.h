/* Transitional: the guest ABI's byte order is guest_abi.h (goes next). */
#include "guest_abi.h"
