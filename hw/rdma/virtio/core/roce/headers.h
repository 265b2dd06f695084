/*
 * virtio-rdma soft-RoCE: field accessors of the IBA transport headers (IBA
 * vol 1 ch. 9.2-9.3; FETH from IBA 1.5 as Linux rxe lays it out).  Each
 * header is a view over exactly its bytes on the wire: a fixed-extent span,
 * so a view can only be made where the caller has already checked that the
 * bytes are there.  The accessors do the byte order (network order on the
 * wire) and nothing else.  X is the read-only view, MutX also has setters.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_ROCE_HEADERS_H
#define HW_RDMA_VIRTIO_CORE_ROCE_HEADERS_H

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "../byte_order.h"
#include "iba.h"
#include "opcode.h"

namespace vrdma::roce {

/*
 * ---- big-endian loads and stores at any alignment ----
 * Through memcpy and one byte swap: a single unaligned load or store each
 * (GCC 12 does not always merge the byte-wise form on the packet path).
 */

namespace detail {
template <typename T>
inline T load_be(const uint8_t *p)
{
    T v;
    std::memcpy(&v, p, sizeof(v));
    return be(v);
}
template <typename T>
inline void store_be(uint8_t *p, T v)
{
    v = be(v);
    std::memcpy(p, &v, sizeof(v));
}
} // namespace detail

inline uint16_t load_be16(const uint8_t *p)
{
    return detail::load_be<uint16_t>(p);
}

inline uint32_t load_be24(const uint8_t *p)
{
    return uint32_t{p[0]} << 16 | load_be16(p + 1);
}

inline uint32_t load_be32(const uint8_t *p)
{
    return detail::load_be<uint32_t>(p);
}

inline uint64_t load_be64(const uint8_t *p)
{
    return detail::load_be<uint64_t>(p);
}

inline void store_be16(uint8_t *p, uint16_t v)
{
    detail::store_be<uint16_t>(p, v);
}

/* Stores the low 24 bits of @v. */
inline void store_be24(uint8_t *p, uint32_t v)
{
    p[0] = static_cast<uint8_t>(v >> 16);
    store_be16(p + 1, static_cast<uint16_t>(v));
}

inline void store_be32(uint8_t *p, uint32_t v)
{
    detail::store_be<uint32_t>(p, v);
}

inline void store_be64(uint8_t *p, uint64_t v)
{
    detail::store_be<uint64_t>(p, v);
}

inline constexpr uint8_t kBthTver = 0;

/*
 * Base class of the views: @B is uint8_t (mutable) or const uint8_t.
 * Setters exist only on the mutable views.
 */
template <typename B, size_t N>
class HdrView {
public:
    static constexpr size_t kBytes = N;
    static constexpr bool kMutable = !std::is_const_v<B>;

    explicit HdrView(std::span<B, N> s) : p_(s.data()) {}
    std::span<B, N> bytes() const { return std::span<B, N>(p_, N); }

protected:
    B *p_;
};

#define VRDMA_ROCE_SETTER(name, type, body)                                  \
    void set_##name(type v) const                                            \
        requires(!std::is_const_v<B>)                                        \
    {                                                                        \
        body;                                                                \
    }

/*
 * Base Transport Header (IBA 9.2): opcode | SE M Pad(2) TVer(4) | P_Key |
 * FECN BECN resv6 | DestQP(24) | AckReq resv7 | PSN(24).  Byte 4 is the one
 * the ICRC masks (rxe: "resv8a").
 */
template <typename B>
class BthT : public HdrView<B, kBthBytes> {
    using HdrView<B, kBthBytes>::p_;

public:
    using HdrView<B, kBthBytes>::HdrView;
    static constexpr size_t kBytes = kBthBytes;

    uint8_t opcode() const { return p_[0]; }
    bool se() const { return p_[1] & 0x80; }
    bool mig_req() const { return p_[1] & 0x40; }
    uint8_t pad() const { return (p_[1] >> 4) & 3; }
    uint8_t tver() const { return p_[1] & 0x0F; }
    uint16_t pkey() const { return load_be16(p_ + 2); }
    bool fecn() const { return p_[4] & 0x80; }
    bool becn() const { return p_[4] & 0x40; }
    uint32_t qpn() const { return load_be24(p_ + 5); }
    bool ack_req() const { return p_[8] & 0x80; }
    uint32_t psn() const { return load_be24(p_ + 9); }

    VRDMA_ROCE_SETTER(opcode, uint8_t, p_[0] = v)
    VRDMA_ROCE_SETTER(se, bool, p_[1] = (p_[1] & 0x7F) | (v ? 0x80 : 0))
    VRDMA_ROCE_SETTER(mig_req, bool, p_[1] = (p_[1] & 0xBF) | (v ? 0x40 : 0))
    VRDMA_ROCE_SETTER(pad, uint8_t, p_[1] = (p_[1] & 0xCF) | ((v & 3) << 4))
    VRDMA_ROCE_SETTER(tver, uint8_t, p_[1] = (p_[1] & 0xF0) | (v & 0x0F))
    VRDMA_ROCE_SETTER(pkey, uint16_t, store_be16(p_ + 2, v))
    VRDMA_ROCE_SETTER(fecn, bool, p_[4] = (p_[4] & 0x7F) | (v ? 0x80 : 0))
    VRDMA_ROCE_SETTER(becn, bool, p_[4] = (p_[4] & 0xBF) | (v ? 0x40 : 0))
    VRDMA_ROCE_SETTER(qpn, uint32_t, store_be24(p_ + 5, v))
    VRDMA_ROCE_SETTER(ack_req, bool, p_[8] = (p_[8] & 0x7F) | (v ? 0x80 : 0))
    VRDMA_ROCE_SETTER(psn, uint32_t, store_be24(p_ + 9, v))
};

/* Datagram ETH (IBA 9.3.2): Q_Key | resv8 | SrcQP(24). */
template <typename B>
class DethT : public HdrView<B, kDethBytes> {
    using HdrView<B, kDethBytes>::p_;

public:
    using HdrView<B, kDethBytes>::HdrView;
    static constexpr size_t kBytes = kDethBytes;

    uint32_t qkey() const { return load_be32(p_); }
    uint32_t sqp() const { return load_be24(p_ + 5); }

    VRDMA_ROCE_SETTER(qkey, uint32_t, store_be32(p_, v))
    VRDMA_ROCE_SETTER(sqp, uint32_t, store_be24(p_ + 5, v))
};

/*
 * FLUSH ETH (IBA 1.5; rxe_hdr.h): one 32-bit word, bits 3:0 placement
 * type, bits 5:4 selectivity level, the rest reserved.
 */
template <typename B>
class FethT : public HdrView<B, kFethBytes> {
    using HdrView<B, kFethBytes>::p_;

public:
    using HdrView<B, kFethBytes>::HdrView;
    static constexpr size_t kBytes = kFethBytes;

    uint8_t plt() const { return p_[3] & 0x0F; }
    uint8_t sel() const { return (p_[3] >> 4) & 3; }

    VRDMA_ROCE_SETTER(plt, uint8_t, p_[3] = (p_[3] & 0xF0) | (v & 0x0F))
    VRDMA_ROCE_SETTER(sel, uint8_t,
                      p_[3] = (p_[3] & 0xCF) | ((v & 3) << 4))
};

/* RDMA ETH (IBA 9.3.3): VA(64) | R_Key | DMA Length. */
template <typename B>
class RethT : public HdrView<B, kRethBytes> {
    using HdrView<B, kRethBytes>::p_;

public:
    using HdrView<B, kRethBytes>::HdrView;
    static constexpr size_t kBytes = kRethBytes;

    uint64_t va() const { return load_be64(p_); }
    uint32_t rkey() const { return load_be32(p_ + 8); }
    uint32_t dma_len() const { return load_be32(p_ + 12); }

    VRDMA_ROCE_SETTER(va, uint64_t, store_be64(p_, v))
    VRDMA_ROCE_SETTER(rkey, uint32_t, store_be32(p_ + 8, v))
    VRDMA_ROCE_SETTER(dma_len, uint32_t, store_be32(p_ + 12, v))
};

/* Atomic ETH (IBA 9.3.4): VA(64) | R_Key | Swap/Add(64) | Compare(64). */
template <typename B>
class AtomicEthT : public HdrView<B, kAtomicEthBytes> {
    using HdrView<B, kAtomicEthBytes>::p_;

public:
    using HdrView<B, kAtomicEthBytes>::HdrView;
    static constexpr size_t kBytes = kAtomicEthBytes;

    uint64_t va() const { return load_be64(p_); }
    uint32_t rkey() const { return load_be32(p_ + 8); }
    uint64_t swap_add() const { return load_be64(p_ + 12); }
    uint64_t compare() const { return load_be64(p_ + 20); }

    VRDMA_ROCE_SETTER(va, uint64_t, store_be64(p_, v))
    VRDMA_ROCE_SETTER(rkey, uint32_t, store_be32(p_ + 8, v))
    VRDMA_ROCE_SETTER(swap_add, uint64_t, store_be64(p_ + 12, v))
    VRDMA_ROCE_SETTER(compare, uint64_t, store_be64(p_ + 20, v))
};

/* AETH syndrome (IBA 9.7.5.2.1, table 42): type in bits 7:5. */
inline constexpr uint8_t kAethTypeMask = 0xE0;
inline constexpr uint8_t kAethValueMask = 0x1F;
inline constexpr uint8_t kAethAck = 0x00;     /* value: credit count */
inline constexpr uint8_t kAethRnrNak = 0x20;  /* value: RNR timer */
inline constexpr uint8_t kAethNak = 0x60;     /* value: NAK code */
inline constexpr uint8_t kAethNakPsnSeqErr = 0x60;
inline constexpr uint8_t kAethNakInvalidReq = 0x61;
inline constexpr uint8_t kAethNakRemAccessErr = 0x62;
inline constexpr uint8_t kAethNakRemOpErr = 0x63;
inline constexpr uint8_t kAethNakInvalidRdReq = 0x64;
inline constexpr uint8_t kAethNoCredits = 0x1F; /* "credits invalid" */

/* ACK ETH (IBA 9.3.5): Syndrome | MSN(24). */
template <typename B>
class AethT : public HdrView<B, kAethBytes> {
    using HdrView<B, kAethBytes>::p_;

public:
    using HdrView<B, kAethBytes>::HdrView;
    static constexpr size_t kBytes = kAethBytes;

    uint8_t syndrome() const { return p_[0]; }
    uint32_t msn() const { return load_be24(p_ + 1); }

    VRDMA_ROCE_SETTER(syndrome, uint8_t, p_[0] = v)
    VRDMA_ROCE_SETTER(msn, uint32_t, store_be24(p_ + 1, v))
};

/* Atomic ACK ETH (IBA 9.3.6): Original Remote Data(64). */
template <typename B>
class AtomicAckEthT : public HdrView<B, kAtomicAckEthBytes> {
    using HdrView<B, kAtomicAckEthBytes>::p_;

public:
    using HdrView<B, kAtomicAckEthBytes>::HdrView;
    static constexpr size_t kBytes = kAtomicAckEthBytes;

    uint64_t orig() const { return load_be64(p_); }

    VRDMA_ROCE_SETTER(orig, uint64_t, store_be64(p_, v))
};

/*
 * Immediate Data (IBA 9.3.7).  imm() reads it as a big-endian number;
 * verbs' imm_data is the 4 bytes as they are on the wire (__be32), which is
 * imm_raw(): memcpy, no swap.
 */
template <typename B>
class ImmDtT : public HdrView<B, kImmDtBytes> {
    using HdrView<B, kImmDtBytes>::p_;

public:
    using HdrView<B, kImmDtBytes>::HdrView;
    static constexpr size_t kBytes = kImmDtBytes;

    uint32_t imm() const { return load_be32(p_); }
    uint32_t imm_raw() const
    {
        uint32_t v;
        std::memcpy(&v, p_, sizeof(v));
        return v;
    }

    VRDMA_ROCE_SETTER(imm, uint32_t, store_be32(p_, v))
    VRDMA_ROCE_SETTER(imm_raw, uint32_t, std::memcpy(p_, &v, sizeof(v)))
};

/* Invalidate ETH (IBA 9.3.8): R_Key. */
template <typename B>
class IethT : public HdrView<B, kIethBytes> {
    using HdrView<B, kIethBytes>::p_;

public:
    using HdrView<B, kIethBytes>::HdrView;
    static constexpr size_t kBytes = kIethBytes;

    uint32_t rkey() const { return load_be32(p_); }

    VRDMA_ROCE_SETTER(rkey, uint32_t, store_be32(p_, v))
};

#undef VRDMA_ROCE_SETTER

using Bth = BthT<const uint8_t>;
using MutBth = BthT<uint8_t>;
using Deth = DethT<const uint8_t>;
using MutDeth = DethT<uint8_t>;
using Feth = FethT<const uint8_t>;
using MutFeth = FethT<uint8_t>;
using Reth = RethT<const uint8_t>;
using MutReth = RethT<uint8_t>;
using AtomicEth = AtomicEthT<const uint8_t>;
using MutAtomicEth = AtomicEthT<uint8_t>;
using Aeth = AethT<const uint8_t>;
using MutAeth = AethT<uint8_t>;
using AtomicAckEth = AtomicAckEthT<const uint8_t>;
using MutAtomicAckEth = AtomicAckEthT<uint8_t>;
using ImmDt = ImmDtT<const uint8_t>;
using MutImmDt = ImmDtT<uint8_t>;
using Ieth = IethT<const uint8_t>;
using MutIeth = IethT<uint8_t>;

/*
 * The view of header @V at @off in @hdrs.  The caller has checked
 * off + V::kBytes <= hdrs.size() (the parser does, from the opcode table).
 */
template <typename V, typename B>
V hdr_at(std::span<B> hdrs, size_t off)
{
    return V(std::span<B, V::kBytes>(hdrs.data() + off, V::kBytes));
}

} // namespace vrdma::roce

#endif
