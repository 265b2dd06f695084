/*
 * rdmacm-mux: CM MAD checks and drop names (cm_mad.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "cm_mad.h"

#include <iterator>

namespace rdmacm_mux {

namespace {

struct DropInfo {
    const char *name;
    const char *text;
};

constexpr DropInfo kDrops[] = {
#define RDMACM_MUX_DROP_INFO(name, text) {#name, text},
    RDMACM_MUX_DROPS(RDMACM_MUX_DROP_INFO)
#undef RDMACM_MUX_DROP_INFO
};
static_assert(std::size(kDrops) == kDropCount);

/* MAD common header offsets (IBA 13.4.2). */
constexpr size_t kOffBaseVersion = 0;
constexpr size_t kOffMgmtClass = 1;
constexpr size_t kOffClassVersion = 2;
constexpr size_t kOffMethod = 3;
constexpr size_t kOffAttrId = 16; /* big-endian */

} // namespace

const char *drop_name(Drop d)
{
    return d < Drop::count ? kDrops[static_cast<size_t>(d)].name : "?";
}

const char *drop_text(Drop d)
{
    return d < Drop::count ? kDrops[static_cast<size_t>(d)].text : "?";
}

std::optional<Drop> check_cm_mad(const uint8_t *mad, size_t len)
{
    if (len != kMadLen) {
        return Drop::mad_len;
    }
    if (mad[kOffBaseVersion] != kMadBaseVersion) {
        return Drop::base_version;
    }
    if (mad[kOffMgmtClass] != kCmClass) {
        return Drop::mgmt_class;
    }
    if (mad[kOffClassVersion] != kCmClassVersion) {
        return Drop::class_version;
    }
    /* The response bit (0x80) included: the CM only ever sends. */
    if (mad[kOffMethod] != kMethodSend) {
        return Drop::method;
    }
    uint16_t attr = static_cast<uint16_t>(mad[kOffAttrId] << 8 |
                                          mad[kOffAttrId + 1]);
    if (attr < kCmAttrFirst || attr > kCmAttrLast) {
        return Drop::attribute;
    }
    return std::nullopt;
}

} // namespace rdmacm_mux
