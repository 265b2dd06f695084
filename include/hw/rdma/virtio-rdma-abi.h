/*
 * virtio-rdma guest ABI: every guest-visible structure of the device.
 *
 * Version 2 (config hw_ver): queues in guest memory only.  The structures
 * are the RFC-era driver's (naturally aligned, 4-byte enums; only the
 * config space is packed), not a packed reading of the 2022 draft text,
 * but its data path -- a virtqueue per CQ, two per QP -- is gone.  docs/specs/
 * virtio-rdma.rst describes it field by field; the static_asserts below pin
 * every size and offset so C, C++ and the qtest driver cannot drift.
 *
 * All multi-byte fields are little-endian.  Plain C99 + stdint only: this
 * header is included by QEMU's C code, the C++ core and the tests.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_RDMA_ABI_H
#define HW_RDMA_VIRTIO_RDMA_ABI_H

#ifdef __KERNEL__
/* The guest driver (guest/linux) includes this header too. */
#include <linux/types.h>
#include <linux/stddef.h>
#else
#include <stddef.h>
#include <stdint.h>
#endif

#ifdef __cplusplus
#define VRDMA_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define VRDMA_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

#define VIRTIO_ID_RDMA_DEVICE 42
#define VIRTIO_RDMA_PCI_DEVICE_ID (0x1040 + VIRTIO_ID_RDMA_DEVICE)

/* Spec bounds on the object limits (MRs, PDs, AHs). */
#define VIRTIO_RDMA_LIMIT_MIN 1
#define VIRTIO_RDMA_LIMIT_MAX 16384

/* The config space's hw_ver: the version of this ABI. */
#define VIRTIO_RDMA_ABI_VERSION 2

/*
 * Device feature bits (bit numbers).  The device offers all three and
 * fails FEATURES_OK unless the driver accepts all three: they name what
 * version 2 is.
 *
 * WIRE_QPN: CREATE_QP_RING answers virtio_rdma_rsp_create_qp_wire: the
 * queue index (names the QP in commands and doorbells) and the wire QPN
 * (what peers address: dest_qp_num, UD remote_qpn, CQE src_qp; and CQE
 * qp_num).
 *
 * EVENT_QUEUE: an armed CQ's notification and the queues' async errors are
 * virtio_rdma_event records on the event queue (VIRTIO_RDMA_VQ_EVENT).
 */
#define VIRTIO_RDMA_F_WIRE_QPN    0
#define VIRTIO_RDMA_F_EVENT_QUEUE 1
/*
 * RINGS: work and completion queues live in guest memory (CREATE_CQ_RING,
 * CREATE_QP_RING; "Queues in guest memory" in the spec), the driver rings
 * doorbells in the doorbell region (a virtio shared memory region, one page
 * per context), CQs are armed by doorbell and errors of a queue are async
 * events on the event queue.
 */
#define VIRTIO_RDMA_F_RINGS       2

/* The device's two virtqueues. */
#define VIRTIO_RDMA_VQ_CTRL  0
#define VIRTIO_RDMA_VQ_EVENT 1
#define VIRTIO_RDMA_NUM_VQS  2

/* ---- Config space (packed, 195 bytes) ---------------------------------- */

struct __attribute__((packed)) virtio_rdma_config {
    uint32_t phys_port_cnt;
    uint64_t sys_image_guid;          /* network byte order, like IB */
    uint32_t vendor_id;
    uint32_t vendor_part_id;
    uint32_t hw_ver;
    uint64_t max_mr_size;
    uint64_t page_size_cap;
    uint32_t reserved_max_qp;         /* 0: version 1's virtqueue limits */
    uint32_t reserved_max_qp_wr;      /* 0 */
    uint64_t device_cap_flags;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    uint32_t max_sge_rd;
    uint32_t reserved_max_cq;         /* 0 */
    uint32_t reserved_max_cqe;        /* 0 */
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_qp_rd_atom;
    uint32_t max_res_rd_atom;
    uint32_t max_qp_init_rd_atom;
    uint32_t atomic_cap;              /* draft text: u8 */
    uint32_t max_mw;
    uint32_t max_mcast_grp;
    uint32_t max_mcast_qp_attach;
    uint32_t max_total_mcast_qp_attach;
    uint32_t max_ah;
    uint32_t max_fast_reg_page_list_len;
    uint32_t max_pi_fast_reg_page_list_len;
    uint16_t max_pkeys;
    uint8_t local_ca_ack_delay;
    uint32_t max_ctx;                 /* user contexts, doorbell pages 1.. */
    uint32_t max_ring_cqe;            /* CREATE_CQ_RING's largest cqe */
    uint32_t max_ring_qp_wr;          /* CREATE_QP_RING's deepest queue */
    uint32_t max_ring_qp;             /* QP numbers 0..max_ring_qp-1 */
    uint32_t max_ring_cq;             /* CQ numbers 0..max_ring_cq-1 */
    uint32_t max_srq;                 /* SRQ numbers 1..max_srq */
    uint32_t max_srq_wr;              /* CREATE_SRQ_RING's deepest */
    uint32_t max_srq_sge;             /* SGEs per SRQ request */
    uint8_t reserved[32];             /* draft text: le64[64] */
};

/* device_cap_flags bits (enum ib_device_cap_flags) */
#define VIRTIO_RDMA_DEV_BAD_PKEY_CNTR      (1ULL << 1)
#define VIRTIO_RDMA_DEV_BAD_QKEY_CNTR      (1ULL << 2)
#define VIRTIO_RDMA_DEV_CHANGE_PHY_PORT    (1ULL << 5)
#define VIRTIO_RDMA_DEV_UD_AV_PORT_ENFORCE (1ULL << 6)
#define VIRTIO_RDMA_DEV_SYS_IMAGE_GUID     (1ULL << 11)
#define VIRTIO_RDMA_DEV_RC_RNR_NAK_GEN     (1ULL << 12)
#define VIRTIO_RDMA_DEV_MEM_MGT_EXTENSIONS (1ULL << 21)
#define VIRTIO_RDMA_DEV_BLOCK_MCAST_LOOPBACK (1ULL << 22)
#define VIRTIO_RDMA_DEV_SG_GAPS_REG        (1ULL << 32)

enum virtio_rdma_atomic_cap {
    VIRTIO_RDMA_ATOMIC_NONE = 0,
    VIRTIO_RDMA_ATOMIC_HCA = 1,
    VIRTIO_RDMA_ATOMIC_GLOB = 2,
};

/* ---- Control queue ------------------------------------------------------ */

/*
 * A control request is: device-readable [u8 cmd][request], device-writable
 * [u8 status][response].  The command byte is its own 1-byte descriptor.
 */
enum virtio_rdma_ctrl_cmd {
    VIRTIO_RDMA_CMD_ILLEGAL = 0,
    VIRTIO_RDMA_CMD_QUERY_PORT = 1,
    VIRTIO_RDMA_CMD_CREATE_CQ,        /* version 1 only: EOPNOTSUPP */
    VIRTIO_RDMA_CMD_DESTROY_CQ,
    VIRTIO_RDMA_CMD_CREATE_PD,
    VIRTIO_RDMA_CMD_DESTROY_PD,
    VIRTIO_RDMA_CMD_GET_DMA_MR,
    VIRTIO_RDMA_CMD_CREATE_MR,
    VIRTIO_RDMA_CMD_MAP_MR_SG,
    VIRTIO_RDMA_CMD_REG_USER_MR,
    VIRTIO_RDMA_CMD_DEREG_MR,
    VIRTIO_RDMA_CMD_CREATE_QP,        /* version 1 only: EOPNOTSUPP */
    VIRTIO_RDMA_CMD_MODIFY_QP,
    VIRTIO_RDMA_CMD_QUERY_QP,
    VIRTIO_RDMA_CMD_DESTROY_QP,
    VIRTIO_RDMA_CMD_QUERY_PKEY,
    VIRTIO_RDMA_CMD_ADD_GID,
    VIRTIO_RDMA_CMD_DEL_GID,
    VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ,    /* version 1 only: EOPNOTSUPP */
    VIRTIO_RDMA_CMD_ALLOC_CONTEXT,
    VIRTIO_RDMA_CMD_FREE_CONTEXT,
    VIRTIO_RDMA_CMD_CREATE_CQ_RING,
    VIRTIO_RDMA_CMD_CREATE_QP_RING,
    VIRTIO_RDMA_CMD_CREATE_SRQ_RING,
    VIRTIO_RDMA_CMD_MODIFY_SRQ,
    VIRTIO_RDMA_CMD_QUERY_SRQ,
    VIRTIO_RDMA_CMD_DESTROY_SRQ,
    VIRTIO_RDMA_CMD_MAX = VIRTIO_RDMA_CMD_DESTROY_SRQ,
};

/*
 * Status byte.  0 is success; errors are positive errno values (the RFC
 * engine wrote a negative errno truncated to u8; the driver tests only for
 * 0, so we use the unambiguous positive value).
 */
enum virtio_rdma_status {
    VIRTIO_RDMA_OK = 0,
    VIRTIO_RDMA_EPERM = 1,    /* a GID management does not allow (allowed-gids) */
    VIRTIO_RDMA_ENOENT = 2,   /* no such object (bad or stale handle) */
    VIRTIO_RDMA_EIO = 5,      /* the host RDMA device failed it (backend=ibverbs) */
    VIRTIO_RDMA_ENOMEM = 12,  /* object table full */
    VIRTIO_RDMA_EFAULT = 14,  /* guest address outside RAM */
    VIRTIO_RDMA_EBUSY = 16,   /* object still referenced */
    VIRTIO_RDMA_EINVAL = 22,  /* malformed request or invalid argument */
    VIRTIO_RDMA_ERANGE = 34,  /* size/count outside the device limits */
    VIRTIO_RDMA_EOPNOTSUPP = 95, /* unknown command or unsupported option */
};

struct virtio_rdma_cmd_query_port {
    uint32_t port;
};

enum virtio_rdma_port_state {
    VIRTIO_RDMA_PORT_DOWN = 1,
    VIRTIO_RDMA_PORT_ACTIVE = 4,
};

enum virtio_rdma_mtu {
    VIRTIO_RDMA_MTU_256 = 1,
    VIRTIO_RDMA_MTU_512 = 2,
    VIRTIO_RDMA_MTU_1024 = 3,
    VIRTIO_RDMA_MTU_2048 = 4,
    VIRTIO_RDMA_MTU_4096 = 5,
};

struct virtio_rdma_port_attr {
    uint32_t state;             /* enum ib_port_state */
    uint32_t max_mtu;           /* enum ib_mtu */
    uint32_t active_mtu;        /* enum ib_mtu */
    uint32_t phys_mtu;
    uint32_t gid_tbl_len;
    uint32_t port_cap_flags;
    uint32_t max_msg_sz;
    uint32_t bad_pkey_cntr;
    uint32_t qkey_viol_cntr;
    uint16_t pkey_tbl_len;
    uint8_t active_width;
    uint8_t pad0;
    uint16_t active_speed;
    uint8_t phys_state;
    uint8_t pad1;
    uint32_t reserved[32];
};

struct virtio_rdma_rsp_create_cq {
    uint32_t cqn;
};

struct virtio_rdma_cmd_destroy_cq {
    uint32_t cqn;
};

struct virtio_rdma_rsp_create_pd {
    uint32_t pdn;
};

struct virtio_rdma_cmd_destroy_pd {
    uint32_t pdn;
};

/* enum ib_access_flags */
#define VIRTIO_RDMA_ACCESS_LOCAL_WRITE   (1u << 0)
#define VIRTIO_RDMA_ACCESS_REMOTE_WRITE  (1u << 1)
#define VIRTIO_RDMA_ACCESS_REMOTE_READ   (1u << 2)
#define VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC (1u << 3)
#define VIRTIO_RDMA_ACCESS_MW_BIND       (1u << 4)
#define VIRTIO_RDMA_ACCESS_ZERO_BASED    (1u << 5)
#define VIRTIO_RDMA_ACCESS_ON_DEMAND     (1u << 6)
#define VIRTIO_RDMA_ACCESS_HUGETLB       (1u << 7)
#define VIRTIO_RDMA_ACCESS_RELAXED_ORDERING (1u << 20)
#define VIRTIO_RDMA_ACCESS_REMOTE \
    (VIRTIO_RDMA_ACCESS_REMOTE_WRITE | VIRTIO_RDMA_ACCESS_REMOTE_READ | \
     VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC)
/* The access bits this device accepts; anything else is EINVAL. */
#define VIRTIO_RDMA_ACCESS_SUPPORTED \
    (VIRTIO_RDMA_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_ACCESS_REMOTE | \
     VIRTIO_RDMA_ACCESS_RELAXED_ORDERING)

struct virtio_rdma_cmd_get_dma_mr {
    uint32_t pdn;
    uint32_t access_flags;
};

struct virtio_rdma_rsp_mr {          /* GET_DMA_MR, CREATE_MR, REG_USER_MR */
    uint32_t mrn;
    uint32_t lkey;
    uint32_t rkey;
};

struct virtio_rdma_cmd_create_mr {
    uint32_t pdn;
    uint32_t access_flags;
    uint32_t max_num_sg;
};

/*
 * MR page tables: `pages` is the guest-physical address of one 4 KiB level-1
 * page of up to 512 le64 guest-physical addresses of level-2 pages, each of
 * up to 512 le64 guest-physical addresses of 4 KiB data pages -- for up to
 * VIRTIO_RDMA_PT2_PAGES data pages (1 GiB).  More (up to
 * VIRTIO_RDMA_MAX_MR_PAGES, 512 GiB): `pages` is a level-0 page of up to 512
 * addresses of level-1 pages, each for the next 512 * 512 data pages.
 */
#define VIRTIO_RDMA_PAGE_SIZE 4096u
#define VIRTIO_RDMA_PAGE_SHIFT 12
#define VIRTIO_RDMA_PT_ENTRIES 512u
#define VIRTIO_RDMA_PT2_PAGES (VIRTIO_RDMA_PT_ENTRIES * VIRTIO_RDMA_PT_ENTRIES)
#define VIRTIO_RDMA_MAX_MR_PAGES (VIRTIO_RDMA_PT2_PAGES * VIRTIO_RDMA_PT_ENTRIES)

struct virtio_rdma_cmd_map_mr_sg {
    uint32_t mrn;
    uint32_t npages;
    uint64_t start;
    uint64_t length;
    uint64_t pages;
};

struct virtio_rdma_rsp_map_mr_sg {
    uint32_t npages;
};

struct virtio_rdma_cmd_reg_user_mr {
    uint32_t pdn;
    uint32_t access_flags;
    uint64_t start;
    uint64_t length;
    uint64_t virt_addr;
    uint64_t pages;
    uint32_t npages;
    uint32_t pad;                /* tail padding of the natural layout */
};

struct virtio_rdma_cmd_dereg_mr {
    uint32_t mrn;
};

enum virtio_rdma_qp_type {
    VIRTIO_RDMA_QPT_SMI = 0,
    VIRTIO_RDMA_QPT_GSI = 1,
    VIRTIO_RDMA_QPT_RC = 2,
    VIRTIO_RDMA_QPT_UC = 3,
    VIRTIO_RDMA_QPT_UD = 4,
};

enum virtio_rdma_sig_type {
    VIRTIO_RDMA_SIGNAL_ALL_WR = 0,
    VIRTIO_RDMA_SIGNAL_REQ_WR = 1,
};

struct virtio_rdma_cmd_create_qp {
    uint32_t pdn;
    uint8_t qp_type;
    uint8_t sq_sig_type;
    uint8_t pad[2];
    uint32_t max_send_wr;
    uint32_t max_send_sge;
    uint32_t send_cqn;
    uint32_t max_recv_wr;
    uint32_t max_recv_sge;
    uint32_t recv_cqn;
    uint32_t max_inline_data;
};

struct virtio_rdma_rsp_create_qp_wire {
    uint32_t qpn;                /* queue index */
    uint32_t wire_qpn;           /* 24-bit QP number on the wire */
};

enum virtio_rdma_qp_state {
    VIRTIO_RDMA_QPS_RESET = 0,
    VIRTIO_RDMA_QPS_INIT,
    VIRTIO_RDMA_QPS_RTR,
    VIRTIO_RDMA_QPS_RTS,
    VIRTIO_RDMA_QPS_SQD,
    VIRTIO_RDMA_QPS_SQE,
    VIRTIO_RDMA_QPS_ERR,
};

/* enum ib_qp_attr_mask */
#define VIRTIO_RDMA_QP_STATE              (1u << 0)
#define VIRTIO_RDMA_QP_CUR_STATE          (1u << 1)
#define VIRTIO_RDMA_QP_EN_SQD_ASYNC_NOTIFY (1u << 2)
#define VIRTIO_RDMA_QP_ACCESS_FLAGS       (1u << 3)
#define VIRTIO_RDMA_QP_PKEY_INDEX         (1u << 4)
#define VIRTIO_RDMA_QP_PORT               (1u << 5)
#define VIRTIO_RDMA_QP_QKEY               (1u << 6)
#define VIRTIO_RDMA_QP_AV                 (1u << 7)
#define VIRTIO_RDMA_QP_PATH_MTU           (1u << 8)
#define VIRTIO_RDMA_QP_TIMEOUT            (1u << 9)
#define VIRTIO_RDMA_QP_RETRY_CNT          (1u << 10)
#define VIRTIO_RDMA_QP_RNR_RETRY          (1u << 11)
#define VIRTIO_RDMA_QP_RQ_PSN             (1u << 12)
#define VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC   (1u << 13)
#define VIRTIO_RDMA_QP_ALT_PATH           (1u << 14)
#define VIRTIO_RDMA_QP_MIN_RNR_TIMER      (1u << 15)
#define VIRTIO_RDMA_QP_SQ_PSN             (1u << 16)
#define VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC (1u << 17)
#define VIRTIO_RDMA_QP_PATH_MIG_STATE     (1u << 18)
#define VIRTIO_RDMA_QP_CAP                (1u << 19)
#define VIRTIO_RDMA_QP_DEST_QPN           (1u << 20)
#define VIRTIO_RDMA_QP_RATE_LIMIT         (1u << 25)

struct virtio_rdma_global_route {
    uint8_t dgid[16];            /* union ib_gid: 8-byte aligned */
    uint32_t flow_label;
    uint8_t sgid_index;
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint8_t pad;
} __attribute__((aligned(8)));

#define VIRTIO_RDMA_AH_GRH 1

struct virtio_rdma_ah_attr {
    struct virtio_rdma_global_route grh;
    uint8_t sl;
    uint8_t static_rate;
    uint8_t port_num;
    uint8_t ah_flags;
    uint8_t dmac[6];
    uint8_t pad[6];
};

struct virtio_rdma_qp_cap {
    uint32_t max_send_wr;
    uint32_t max_recv_wr;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    uint32_t max_inline_data;
};

struct virtio_rdma_qp_attr {
    uint32_t qp_state;           /* enum ib_qp_state */
    uint32_t cur_qp_state;
    uint32_t path_mtu;           /* enum ib_mtu */
    uint32_t path_mig_state;
    uint32_t qkey;
    uint32_t rq_psn;
    uint32_t sq_psn;
    uint32_t dest_qp_num;
    uint32_t qp_access_flags;
    uint16_t pkey_index;
    uint16_t alt_pkey_index;
    uint8_t en_sqd_async_notify;
    uint8_t sq_draining;
    uint8_t max_rd_atomic;
    uint8_t max_dest_rd_atomic;
    uint8_t min_rnr_timer;
    uint8_t port_num;
    uint8_t timeout;
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t alt_port_num;
    uint8_t alt_timeout;
    uint8_t pad0;
    uint32_t rate_limit;
    struct virtio_rdma_qp_cap cap;
    uint32_t pad1;
    struct virtio_rdma_ah_attr ah_attr;
    struct virtio_rdma_ah_attr alt_ah_attr;
};

struct virtio_rdma_cmd_modify_qp {
    uint32_t qpn;
    uint32_t attr_mask;
    struct virtio_rdma_qp_attr attrs;
};

struct virtio_rdma_cmd_query_qp {
    uint32_t qpn;
    uint32_t attr_mask;
};

struct virtio_rdma_cmd_destroy_qp {
    uint32_t qpn;
};

struct virtio_rdma_cmd_query_pkey {
    uint32_t port;
    uint16_t index;
    uint16_t pad;
};

struct virtio_rdma_rsp_query_pkey {
    uint16_t pkey;
};

enum virtio_rdma_gid_type {
    VIRTIO_RDMA_GID_TYPE_IB = 0,
    VIRTIO_RDMA_GID_TYPE_ROCE = 1,
    VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP = 2,   /* RoCEv2 */
};

struct virtio_rdma_cmd_add_gid {
    uint8_t gid[16];
    uint32_t gid_type;
    uint16_t index;
    uint16_t pad;
    uint32_t port_num;
};

struct virtio_rdma_cmd_del_gid {
    uint16_t index;
    uint16_t pad;
    uint32_t port;
};

#define VIRTIO_RDMA_NOTIFY_SOLICITED       (1u << 0)
#define VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION (1u << 1)

/* ---- Send / receive queue elements --------------------------------------- */

enum virtio_rdma_wr_opcode {
    VIRTIO_RDMA_WR_RDMA_WRITE = 0,
    VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM = 1,
    VIRTIO_RDMA_WR_SEND = 2,
    VIRTIO_RDMA_WR_SEND_WITH_IMM = 3,
    VIRTIO_RDMA_WR_RDMA_READ = 4,
    VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP = 5,
    VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD = 6,
    VIRTIO_RDMA_WR_LOCAL_INV = 7,
    VIRTIO_RDMA_WR_SEND_WITH_INV = 9,
    VIRTIO_RDMA_WR_RDMA_READ_WITH_INV = 11,
    VIRTIO_RDMA_WR_REG_MR = 0x20,
};

#define VIRTIO_RDMA_SEND_FENCE     (1u << 0)
#define VIRTIO_RDMA_SEND_SIGNALED  (1u << 1)
#define VIRTIO_RDMA_SEND_SOLICITED (1u << 2)
#define VIRTIO_RDMA_SEND_INLINE    (1u << 3)
#define VIRTIO_RDMA_SEND_IP_CSUM   (1u << 4)

struct virtio_rdma_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

struct virtio_rdma_av {
    uint32_t port;
    uint32_t pdn;
    uint32_t sl_tclass_flowlabel;
    uint8_t dgid[16];
    uint8_t gid_index;
    uint8_t static_rate;
    uint8_t hop_limit;
    uint8_t dmac[6];
    uint8_t reserved[6];
    uint8_t pad;
};

struct virtio_rdma_sq_req {
    uint32_t num_sge;
    uint32_t send_flags;
    uint32_t opcode;             /* enum ib_wr_opcode */
    uint32_t pad0;
    uint64_t wr_id;
    uint32_t ex;                 /* imm_data (BE) or invalidate_rkey */
    uint32_t pad1;
    union {
        struct {
            uint64_t remote_addr;
            uint32_t rkey;
        } rdma;
        struct {
            uint64_t remote_addr;
            uint64_t compare_add;
            uint64_t swap;
            uint32_t rkey;
        } atomic;
        struct {
            uint32_t remote_qpn;
            uint32_t remote_qkey;
            struct virtio_rdma_av av;
        } ud;
        struct {
            uint32_t mrn;
            uint32_t key;
            uint32_t access;
        } reg;
        uint8_t raw[56];
    } wr;
    /* struct virtio_rdma_sge sg_list[num_sge] follows */
};

struct virtio_rdma_rq_req {
    uint32_t num_sge;
    uint32_t pad;
    uint64_t wr_id;
    /* struct virtio_rdma_sge sg_list[num_sge] follows */
};

/* ---- Completion queue elements ------------------------------------------- */

enum virtio_rdma_wc_status {
    VIRTIO_RDMA_WC_SUCCESS = 0,
    VIRTIO_RDMA_WC_LOC_LEN_ERR,
    VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
    VIRTIO_RDMA_WC_LOC_EEC_OP_ERR,
    VIRTIO_RDMA_WC_LOC_PROT_ERR,
    VIRTIO_RDMA_WC_WR_FLUSH_ERR,
    VIRTIO_RDMA_WC_MW_BIND_ERR,
    VIRTIO_RDMA_WC_BAD_RESP_ERR,
    VIRTIO_RDMA_WC_LOC_ACCESS_ERR,
    VIRTIO_RDMA_WC_REM_INV_REQ_ERR,
    VIRTIO_RDMA_WC_REM_ACCESS_ERR,
    VIRTIO_RDMA_WC_REM_OP_ERR,
    VIRTIO_RDMA_WC_RETRY_EXC_ERR,
    VIRTIO_RDMA_WC_RNR_RETRY_EXC_ERR,
    VIRTIO_RDMA_WC_LOC_RDD_VIOL_ERR,
    VIRTIO_RDMA_WC_REM_INV_RD_REQ_ERR,
    VIRTIO_RDMA_WC_REM_ABORT_ERR,
    VIRTIO_RDMA_WC_INV_EECN_ERR,
    VIRTIO_RDMA_WC_INV_EEC_STATE_ERR,
    VIRTIO_RDMA_WC_FATAL_ERR,
    VIRTIO_RDMA_WC_RESP_TIMEOUT_ERR,
    VIRTIO_RDMA_WC_GENERAL_ERR,
};

/* CQE opcode: IB_WC_* values, not ib_wr_opcode. */
enum virtio_rdma_wc_opcode {
    VIRTIO_RDMA_WC_SEND = 0,
    VIRTIO_RDMA_WC_RDMA_WRITE = 1,
    VIRTIO_RDMA_WC_RDMA_READ = 2,
    VIRTIO_RDMA_WC_COMP_SWAP = 3,
    VIRTIO_RDMA_WC_FETCH_ADD = 4,
    VIRTIO_RDMA_WC_LOCAL_INV = 6,
    VIRTIO_RDMA_WC_REG_MR = 8,
    VIRTIO_RDMA_WC_RECV = 128,
    VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM = 129,
};

#define VIRTIO_RDMA_WC_GRH             (1u << 0)
#define VIRTIO_RDMA_WC_WITH_IMM        (1u << 1)
#define VIRTIO_RDMA_WC_WITH_INVALIDATE (1u << 2)

struct virtio_rdma_cq_req {
    uint64_t wr_id;
    uint32_t status;
    uint32_t opcode;
    uint32_t vendor_err;
    uint32_t byte_len;
    uint32_t ex;
    uint32_t qp_num;
    uint32_t src_qp;
    uint32_t wc_flags;
    uint16_t pkey_index;
    uint16_t slid;
    uint8_t sl;
    uint8_t dlid_path_bits;
    uint8_t port_num;
    uint8_t pad;
};

/* ---- Queues in guest memory (VIRTIO_RDMA_F_RINGS) ----------------------- */

/*
 * A context owns queues and one doorbell page: 0 is the kernel's, 1..max_ctx
 * are allocated (ALLOC_CONTEXT) for user processes.
 */
#define VIRTIO_RDMA_KERNEL_CTX 0

struct virtio_rdma_rsp_alloc_context {
    uint32_t ctx;
};

struct virtio_rdma_cmd_free_context {
    uint32_t ctx;
};

/*
 * A ring: 1 << log_entries entries of 1 << log_stride bytes, then a
 * virtio_rdma_ring_trailer, in npages 4 KiB pages described by an MR page
 * table at `pages` (the ring starts at offset 0 of its first page).  An entry
 * never crosses a page.  A queue with no work requests has no ring (all 0).
 */
struct virtio_rdma_ring {
    uint64_t pages;
    uint32_t npages;
    uint8_t log_entries;
    uint8_t log_stride;
    uint16_t reserved;
};

#define VIRTIO_RDMA_RING_MAX_LOG_ENTRIES 16
#define VIRTIO_RDMA_RING_MIN_LOG_STRIDE 6      /* 64 bytes */
#define VIRTIO_RDMA_RING_MAX_LOG_STRIDE 12     /* a page */
#define VIRTIO_RDMA_CQE_LOG_STRIDE 6
/* A CQ ring holds no per-entry state in the device: only the ring bounds it. */
#define VIRTIO_RDMA_RING_MAX_CQE ((1u << VIRTIO_RDMA_RING_MAX_LOG_ENTRIES) - 1)
/*
 * The deepest SQ or RQ of CREATE_QP_RING: the device keeps a bounded
 * window of each queue's requests, not one slot per request, so only the
 * ring bounds it (rxe: 16384).
 */
#define VIRTIO_RDMA_RING_MAX_QP_WR 32768
/* The most QP and CQ numbers (max_ring_qp, max_ring_cq in the config). */
#define VIRTIO_RDMA_RING_MAX_QP 131072
#define VIRTIO_RDMA_RING_MAX_CQ VIRTIO_RDMA_LIMIT_MAX

/*
 * After the entries.  Indexes are free-running 32-bit counters; entry
 * i & (entries - 1) is the one counter i names.
 *   CQ:      driver_idx = the driver's consumer index (it writes it);
 *            device_idx = the device's producer index (it writes it).
 *   SQ, RQ:  driver_idx = the driver's producer index (the doorbell carries
 *            it; the device does not read this one);
 *            device_idx = entries the device has copied out; it never reads
 *            an entry before it again.
 */
struct virtio_rdma_ring_trailer {
    uint32_t driver_idx;
    uint32_t device_idx;
    uint32_t reserved[14];
};

struct virtio_rdma_cmd_create_cq_ring {
    uint32_t ctx;
    uint32_t cqe;                /* depth, 1..max_cqe; entries >= cqe */
    struct virtio_rdma_ring ring; /* log_stride VIRTIO_RDMA_CQE_LOG_STRIDE */
};

struct virtio_rdma_cmd_create_qp_ring {
    struct virtio_rdma_cmd_create_qp qp;
    uint32_t ctx;
    struct virtio_rdma_ring sq;  /* virtio_rdma_sq_req + SGEs per entry */
    struct virtio_rdma_ring rq;  /* virtio_rdma_rq_req + SGEs per entry */
    uint32_t srqn;               /* 0, or the SRQ it receives from (rq: none) */
    uint32_t flags;              /* 0 */
};

/*
 * A shared receive queue: a ring of receive requests (virtio_rdma_rq_req
 * and its SGEs per entry) that the QPs created with its srqn take from, one
 * request per message, in ring order.  SRQ numbers start at 1.
 */
#define VIRTIO_RDMA_RING_MAX_SRQ 16384
#define VIRTIO_RDMA_RING_MAX_SRQ_WR VIRTIO_RDMA_RING_MAX_QP_WR

struct virtio_rdma_cmd_create_srq_ring {
    uint32_t ctx;
    uint32_t pdn;
    uint32_t max_wr;             /* 1..max_srq_wr; ring entries >= max_wr */
    uint32_t max_sge;            /* 1..max_srq_sge */
    uint32_t srq_limit;          /* 0 (not armed) .. max_wr */
    uint32_t reserved;           /* 0 */
    struct virtio_rdma_ring ring;
};

struct virtio_rdma_rsp_create_srq {
    uint32_t srqn;
};

/* MODIFY_SRQ's attr_mask (enum ib_srq_attr_mask) */
#define VIRTIO_RDMA_SRQ_MAX_WR (1u << 0)  /* resize: EOPNOTSUPP */
#define VIRTIO_RDMA_SRQ_LIMIT  (1u << 1)

struct virtio_rdma_cmd_modify_srq {
    uint32_t srqn;
    uint32_t attr_mask;
    uint32_t max_wr;
    uint32_t srq_limit;          /* 0 disarms; else arms, <= max_wr */
};

struct virtio_rdma_cmd_query_srq {
    uint32_t srqn;
};

struct virtio_rdma_rsp_query_srq {
    uint32_t max_wr;
    uint32_t max_sge;
    uint32_t srq_limit;          /* 0 once the limit event fired */
    uint32_t reserved;
};

struct virtio_rdma_cmd_destroy_srq {
    uint32_t srqn;
};

/*
 * A completion in a CQ ring: the CQE, then the owner byte, written last.  Its
 * bit 0 is 1 on the ring's first pass (counter / entries even), 0 on the
 * second, and so on: the driver zeroes the ring before CREATE_CQ_RING.
 */
struct virtio_rdma_cqe {
    struct virtio_rdma_cq_req wc;
    uint8_t reserved[15];
    uint8_t owner;
};

#define VIRTIO_RDMA_CQE_OWNER 1u

/*
 * A UD/GSI receive completion's sl: RoCE has no service level, so it holds
 * the datagram's L3 header type (the flag of IBA annex A17.4.5.1), as mlx5
 * reports it and UCX's UD transport reads it to check the GRH's DGID.
 */
#define VIRTIO_RDMA_CQE_SL_IPV6 1
#define VIRTIO_RDMA_CQE_SL_IPV4 2

/*
 * The doorbell region: virtio shared memory region
 * VIRTIO_RDMA_SHM_DOORBELLS, one 4 KiB page per context (page c is context
 * c's).  A doorbell is one 8-byte write at offset 0 of the page:
 *   bits 23..0   the queue's number (qpn for SQ and RQ, srqn for SRQ, cqn
 *                for CQ_ARM)
 *   bits 31..24  enum virtio_rdma_db_type
 *   bits 63..32  SQ, RQ, SRQ: the new producer index; CQ_ARM: the notify flags
 *                (VIRTIO_RDMA_NOTIFY_*)
 * A doorbell for a queue its page's context does not own is ignored.
 */
#define VIRTIO_RDMA_SHM_DOORBELLS 0
#define VIRTIO_RDMA_DB_PAGE 4096u
#define VIRTIO_RDMA_DB_QN_MASK 0xffffffu
#define VIRTIO_RDMA_DB_TYPE_SHIFT 24

enum virtio_rdma_db_type {
    VIRTIO_RDMA_DB_SQ = 0,
    VIRTIO_RDMA_DB_RQ = 1,
    VIRTIO_RDMA_DB_SRQ = 2,
    VIRTIO_RDMA_DB_CQ_ARM = 3,
};

#define VIRTIO_RDMA_DB(type, qn, idx) \
    ((uint64_t)(idx) << 32 | (uint32_t)(type) << VIRTIO_RDMA_DB_TYPE_SHIFT | \
     ((qn) & VIRTIO_RDMA_DB_QN_MASK))

/* ---- Event queue (VIRTIO_RDMA_VQ_EVENT) ---------------------------------- */

enum virtio_rdma_event_type {
    VIRTIO_RDMA_EVENT_CQ = 1,    /* handle: cqn; the CQ was armed and fired */
    VIRTIO_RDMA_EVENT_QP_FATAL = 2, /* handle: qpn; a ring broke */
    VIRTIO_RDMA_EVENT_CQ_ERR = 3,   /* handle: cqn; overrun or broken */
    VIRTIO_RDMA_EVENT_SRQ_LIMIT = 4, /* handle: srqn; fewer than limit */
    VIRTIO_RDMA_EVENT_SRQ_ERR = 5,  /* handle: srqn; the SRQ broke */
};

/* One device-writable buffer of at least this size per record. */
struct virtio_rdma_event {
    uint32_t type;
    uint32_t handle;
    uint32_t reserved[2];
};

/* ---- Kernel module <-> rdma-core provider (uverbs driver data) ---------- */

/*
 * Not the device's ABI: what the guest's kernel module and its rdma-core
 * provider pass each other in uverbs commands' driver data once the module
 * runs the rings data path (VIRTIO_RDMA_F_RINGS).  The device never sees
 * these; they live here so that module and provider share one definition.
 *
 * The provider allocates each ring in its own memory (page aligned, the
 * ring's bytes: entries * stride + the trailer) and names it by its user
 * address; the module pins it (ib_umem) and gives the device the page
 * table, so no guest-physical address ever reaches user space.  The
 * process's doorbell page is the one mmap() it may make of the device:
 * at db_mmap_offset on the uverbs file, 4096 bytes, write-only use.
 */
#define VIRTIO_RDMA_UVERBS_ABI_VIRTQUEUES 1   /* every verb a command */
#define VIRTIO_RDMA_UVERBS_ABI_RINGS 2        /* rings in user memory */

struct virtio_rdma_uresp_alloc_ucontext {
    uint32_t ctx;                /* the device context: its doorbell page */
    uint32_t reserved;
    uint64_t db_mmap_offset;
};

struct virtio_rdma_ucmd_create_cq {
    uint64_t ring_va;            /* 2^log_entries CQEs, then the trailer */
    uint8_t log_entries;
    uint8_t reserved[7];
};

struct virtio_rdma_uresp_create_cq {
    uint32_t cqn;                /* what CQ_ARM doorbells name */
    uint32_t reserved;
};

struct virtio_rdma_ucmd_create_qp {
    uint64_t sq_va;              /* 0 for a QP without that queue */
    uint64_t rq_va;
    uint8_t sq_log_entries;
    uint8_t sq_log_stride;
    uint8_t rq_log_entries;
    uint8_t rq_log_stride;
    uint32_t reserved;
};

struct virtio_rdma_ucmd_create_srq {
    uint64_t ring_va;            /* 2^log_entries entries, then the trailer */
    uint8_t log_entries;
    uint8_t log_stride;
    uint8_t reserved[6];
};

struct virtio_rdma_uresp_create_srq {
    uint32_t srqn;               /* what SRQ doorbells name */
    uint32_t reserved;
};

struct virtio_rdma_uresp_create_qp {
    uint32_t qpn;                /* the queue index SQ/RQ doorbells name */
    uint32_t reserved;
};

/*
 * The address vector the module made of the user's ah_attr: what the
 * provider copies into each UD send entry.  It is the process's own
 * request resolved (its PD, its GID index, the peer's MAC); the device
 * checks a posted one as it checks any.
 */
struct virtio_rdma_uresp_create_ah {
    struct virtio_rdma_av av;
    uint32_t reserved;
};

/* ---- Layout pins ---------------------------------------------------------- */

#define VRDMA_PIN(type, field, off) \
    VRDMA_STATIC_ASSERT(offsetof(struct type, field) == (off), \
                        #type "." #field " offset")
#define VRDMA_SIZE(type, size) \
    VRDMA_STATIC_ASSERT(sizeof(struct type) == (size), #type " size")

VRDMA_SIZE(virtio_rdma_config, 195);
VRDMA_PIN(virtio_rdma_config, sys_image_guid, 4);
VRDMA_PIN(virtio_rdma_config, max_mr_size, 24);
VRDMA_PIN(virtio_rdma_config, reserved_max_qp, 40);
VRDMA_PIN(virtio_rdma_config, device_cap_flags, 48);
VRDMA_PIN(virtio_rdma_config, reserved_max_cq, 68);
VRDMA_PIN(virtio_rdma_config, atomic_cap, 96);
VRDMA_PIN(virtio_rdma_config, max_ah, 116);
VRDMA_PIN(virtio_rdma_config, max_pkeys, 128);
VRDMA_PIN(virtio_rdma_config, local_ca_ack_delay, 130);
VRDMA_PIN(virtio_rdma_config, max_srq, 151);
VRDMA_PIN(virtio_rdma_config, max_srq_wr, 155);
VRDMA_PIN(virtio_rdma_config, max_srq_sge, 159);
VRDMA_PIN(virtio_rdma_config, reserved, 163);

VRDMA_SIZE(virtio_rdma_port_attr, 172);
VRDMA_PIN(virtio_rdma_port_attr, phys_mtu, 12);
VRDMA_PIN(virtio_rdma_port_attr, pkey_tbl_len, 36);
VRDMA_PIN(virtio_rdma_port_attr, active_width, 38);
VRDMA_PIN(virtio_rdma_port_attr, active_speed, 40);
VRDMA_PIN(virtio_rdma_port_attr, phys_state, 42);
VRDMA_PIN(virtio_rdma_port_attr, reserved, 44);

VRDMA_SIZE(virtio_rdma_cmd_query_port, 4);
VRDMA_SIZE(virtio_rdma_cmd_get_dma_mr, 8);
VRDMA_SIZE(virtio_rdma_rsp_mr, 12);
VRDMA_SIZE(virtio_rdma_cmd_create_mr, 12);
VRDMA_SIZE(virtio_rdma_cmd_map_mr_sg, 32);
VRDMA_PIN(virtio_rdma_cmd_map_mr_sg, pages, 24);
VRDMA_SIZE(virtio_rdma_cmd_reg_user_mr, 48);
VRDMA_PIN(virtio_rdma_cmd_reg_user_mr, virt_addr, 24);
VRDMA_PIN(virtio_rdma_cmd_reg_user_mr, pages, 32);
VRDMA_PIN(virtio_rdma_cmd_reg_user_mr, npages, 40);

VRDMA_SIZE(virtio_rdma_cmd_create_qp, 36);
VRDMA_PIN(virtio_rdma_cmd_create_qp, qp_type, 4);
VRDMA_PIN(virtio_rdma_cmd_create_qp, sq_sig_type, 5);
VRDMA_PIN(virtio_rdma_cmd_create_qp, max_send_wr, 8);
VRDMA_PIN(virtio_rdma_cmd_create_qp, send_cqn, 16);
VRDMA_PIN(virtio_rdma_cmd_create_qp, recv_cqn, 28);
VRDMA_PIN(virtio_rdma_cmd_create_qp, max_inline_data, 32);

VRDMA_SIZE(virtio_rdma_global_route, 24);
VRDMA_SIZE(virtio_rdma_ah_attr, 40);
VRDMA_PIN(virtio_rdma_ah_attr, sl, 24);
VRDMA_PIN(virtio_rdma_ah_attr, dmac, 28);
VRDMA_SIZE(virtio_rdma_qp_attr, 160);
VRDMA_PIN(virtio_rdma_qp_attr, qkey, 16);
VRDMA_PIN(virtio_rdma_qp_attr, pkey_index, 36);
VRDMA_PIN(virtio_rdma_qp_attr, max_rd_atomic, 42);
VRDMA_PIN(virtio_rdma_qp_attr, alt_timeout, 50);
VRDMA_PIN(virtio_rdma_qp_attr, rate_limit, 52);
VRDMA_PIN(virtio_rdma_qp_attr, cap, 56);
VRDMA_PIN(virtio_rdma_qp_attr, ah_attr, 80);
VRDMA_PIN(virtio_rdma_qp_attr, alt_ah_attr, 120);
VRDMA_SIZE(virtio_rdma_cmd_modify_qp, 168);
VRDMA_PIN(virtio_rdma_cmd_modify_qp, attrs, 8);
VRDMA_SIZE(virtio_rdma_cmd_query_qp, 8);

VRDMA_SIZE(virtio_rdma_cmd_query_pkey, 8);
VRDMA_SIZE(virtio_rdma_cmd_add_gid, 28);
VRDMA_PIN(virtio_rdma_cmd_add_gid, gid_type, 16);
VRDMA_PIN(virtio_rdma_cmd_add_gid, index, 20);
VRDMA_PIN(virtio_rdma_cmd_add_gid, port_num, 24);
VRDMA_SIZE(virtio_rdma_cmd_del_gid, 8);
VRDMA_PIN(virtio_rdma_cmd_del_gid, port, 4);

VRDMA_SIZE(virtio_rdma_sge, 16);
VRDMA_SIZE(virtio_rdma_av, 44);
VRDMA_PIN(virtio_rdma_av, dgid, 12);
VRDMA_PIN(virtio_rdma_av, gid_index, 28);
VRDMA_PIN(virtio_rdma_av, dmac, 31);
VRDMA_SIZE(virtio_rdma_sq_req, 88);
VRDMA_PIN(virtio_rdma_sq_req, wr_id, 16);
VRDMA_PIN(virtio_rdma_sq_req, ex, 24);
VRDMA_PIN(virtio_rdma_sq_req, wr, 32);
VRDMA_PIN(virtio_rdma_sq_req, wr.ud.av, 40);
VRDMA_PIN(virtio_rdma_sq_req, wr.atomic.rkey, 56);
VRDMA_SIZE(virtio_rdma_rq_req, 16);
VRDMA_PIN(virtio_rdma_rq_req, wr_id, 8);

VRDMA_SIZE(virtio_rdma_rsp_create_qp_wire, 8);
VRDMA_PIN(virtio_rdma_config, max_ctx, 131);
VRDMA_PIN(virtio_rdma_config, max_ring_cqe, 135);
VRDMA_PIN(virtio_rdma_config, max_ring_qp_wr, 139);
VRDMA_PIN(virtio_rdma_config, max_ring_qp, 143);
VRDMA_PIN(virtio_rdma_config, max_ring_cq, 147);
VRDMA_SIZE(virtio_rdma_ring, 16);
VRDMA_PIN(virtio_rdma_ring, npages, 8);
VRDMA_PIN(virtio_rdma_ring, log_entries, 12);
VRDMA_PIN(virtio_rdma_ring, log_stride, 13);
VRDMA_SIZE(virtio_rdma_ring_trailer, 64);
VRDMA_SIZE(virtio_rdma_cmd_create_cq_ring, 24);
VRDMA_PIN(virtio_rdma_cmd_create_cq_ring, ring, 8);
VRDMA_SIZE(virtio_rdma_cmd_create_qp_ring, 80);
VRDMA_PIN(virtio_rdma_cmd_create_qp_ring, ctx, 36);
VRDMA_PIN(virtio_rdma_cmd_create_qp_ring, sq, 40);
VRDMA_PIN(virtio_rdma_cmd_create_qp_ring, rq, 56);
VRDMA_PIN(virtio_rdma_cmd_create_qp_ring, srqn, 72);
VRDMA_SIZE(virtio_rdma_cmd_create_srq_ring, 40);
VRDMA_PIN(virtio_rdma_cmd_create_srq_ring, ring, 24);
VRDMA_SIZE(virtio_rdma_rsp_create_srq, 4);
VRDMA_SIZE(virtio_rdma_cmd_modify_srq, 16);
VRDMA_SIZE(virtio_rdma_cmd_query_srq, 4);
VRDMA_SIZE(virtio_rdma_rsp_query_srq, 16);
VRDMA_SIZE(virtio_rdma_cmd_destroy_srq, 4);
VRDMA_SIZE(virtio_rdma_ucmd_create_srq, 16);
VRDMA_SIZE(virtio_rdma_uresp_create_srq, 8);
VRDMA_SIZE(virtio_rdma_cqe, 64);
VRDMA_SIZE(virtio_rdma_uresp_alloc_ucontext, 16);
VRDMA_SIZE(virtio_rdma_ucmd_create_cq, 16);
VRDMA_SIZE(virtio_rdma_uresp_create_cq, 8);
VRDMA_SIZE(virtio_rdma_ucmd_create_qp, 24);
VRDMA_PIN(virtio_rdma_ucmd_create_qp, sq_log_entries, 16);
VRDMA_SIZE(virtio_rdma_uresp_create_qp, 8);
VRDMA_SIZE(virtio_rdma_uresp_create_ah, 48);
VRDMA_PIN(virtio_rdma_cqe, owner, 63);
VRDMA_SIZE(virtio_rdma_event, 16);
VRDMA_SIZE(virtio_rdma_cq_req, 48);
VRDMA_PIN(virtio_rdma_cq_req, status, 8);
VRDMA_PIN(virtio_rdma_cq_req, qp_num, 28);
VRDMA_PIN(virtio_rdma_cq_req, wc_flags, 36);
VRDMA_PIN(virtio_rdma_cq_req, pkey_index, 40);
VRDMA_PIN(virtio_rdma_cq_req, sl, 44);
VRDMA_PIN(virtio_rdma_cq_req, port_num, 46);

#undef VRDMA_PIN
#undef VRDMA_SIZE

#endif /* HW_RDMA_VIRTIO_RDMA_ABI_H */
