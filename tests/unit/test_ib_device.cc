/*
 * The ibverbs backend's host device: opened by name, its port checked,
 * its completion channel and async-event fd watched; every refusal a
 * message for the user and nothing left open on the host.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <cstring>

#include "ib_fixture.h"

namespace vrdma_test {
namespace {

using IbHostDevice = IbTest;

/* A core that must be refused: @returns its message. */
std::string refused(FakeHostVerbs &verbs, const std::string &dev,
                    unsigned port = 1)
{
    std::string err;
    Node n(nullptr, 5, dp_limits(), ib_core(verbs, dev, port, &err));
    EXPECT_EQ(n.core, nullptr);
    EXPECT_TRUE(n.fd_watches.empty()) << "a refused core watches nothing";
    return err;
}

TEST_F(IbHostDevice, OpensTheNamedDeviceAndWatchesItsFds)
{
    EXPECT_EQ(verbs.contexts(), 1u);
    EXPECT_EQ(verbs.channels(), 1u);
    EXPECT_EQ(verbs.calls(Verb::kOpenDevice), 1u);
    ASSERT_NE(verbs.channel_of(ctx_a), nullptr);
    EXPECT_EQ(a->fd_watches.count(verbs.channel_of(ctx_a)->ch.fd), 1u);
    EXPECT_EQ(a->fd_watches.count(ctx_a->async_fd), 1u);
    EXPECT_EQ(a->fd_watches.size(), 2u);
}

TEST_F(IbHostDevice, FreeStopsWatchingAndClosesTheDevice)
{
    a.reset();
    EXPECT_EQ(verbs.contexts(), 0u);
    EXPECT_EQ(verbs.channels(), 0u);
}

TEST_F(IbHostDevice, UnknownDeviceNamesTheHostsDevices)
{
    const std::string err = refused(verbs, "mlx5_9");
    EXPECT_NE(err.find("no host RDMA device 'mlx5_9'"), std::string::npos)
        << err;
    EXPECT_NE(err.find("fake0"), std::string::npos) << err;
    EXPECT_EQ(verbs.contexts(), 1u) << "only the fixture's core's";
}

TEST_F(IbHostDevice, RefusedOpenSaysWhy)
{
    verbs.refuse(Verb::kOpenDevice, EACCES);
    const std::string err = refused(verbs, "fake0");
    EXPECT_NE(err.find(std::strerror(EACCES)), std::string::npos) << err;
}

TEST_F(IbHostDevice, NoSuchPortIsRefused)
{
    const std::string err = refused(verbs, "fake0", 2);
    EXPECT_NE(err.find("has no port 2"), std::string::npos) << err;
    EXPECT_EQ(verbs.contexts(), 1u) << "the refused one's was closed";
}

TEST_F(IbHostDevice, InfiniBandPortIsRefused)
{
    verbs.port_attr.link_layer = IBV_LINK_LAYER_INFINIBAND;
    const std::string err = refused(verbs, "fake0");
    EXPECT_NE(err.find("not Ethernet"), std::string::npos) << err;
}

TEST_F(IbHostDevice, RefusedQueriesAreRefusals)
{
    verbs.refuse(Verb::kQueryDevice, EIO);
    EXPECT_NE(refused(verbs, "fake0").find("cannot query host RDMA device"),
              std::string::npos);
    verbs.refuse(Verb::kQueryPort, EIO);
    EXPECT_NE(refused(verbs, "fake0").find("cannot query port 1"),
              std::string::npos);
}

/*
 * Regression: a core whose completion channel the host refused was
 * deleted through its destructor, whose detach read the missing
 * channel's fd (a NULL dereference) instead of refusing the device.
 */
TEST_F(IbHostDevice, NoCompletionChannelIsARefusalNotACrash)
{
    verbs.refuse(Verb::kCreateCompChannel, EMFILE);
    const std::string err = refused(verbs, "fake0");
    EXPECT_NE(err.find("cannot make a completion channel"), std::string::npos)
        << err;
    EXPECT_EQ(verbs.contexts(), 1u) << "the refused core's device is closed";
}

TEST_F(IbHostDevice, LimitsAreTheHostsWhereLower)
{
    verbs.dev_attr.max_qp = 5;
    verbs.dev_attr.max_cqe = 64;
    verbs.dev_attr.max_srq = 0; /* no SRQs on this host */
    b = tenant(1, &ctx_b);
    ASSERT_NE(b->core, nullptr);
    virtio_rdma_config cfg{};
    vrdma_core_get_config(b->core, &cfg);
    const uint32_t max_qp = cfg.max_ring_qp, max_srq = cfg.max_srq,
                   max_cqe = cfg.max_ring_cqe;
    EXPECT_EQ(max_qp, 5u);
    EXPECT_EQ(max_srq, 0u);
    EXPECT_EQ(max_cqe, 64u);
    vrdma_core_get_config(a->core, &cfg);
    const uint32_t first = cfg.max_ring_qp;
    EXPECT_EQ(first, dp_limits().max_qp) << "the first core's stay";
}

/* What realize checks and `info rdma` shows (vrdma_ib_probe). */
TEST_F(IbHostDevice, ProbeLowersTheLimitsAndDescribesTheHost)
{
    verbs.dev_attr.max_mr = 3;
    verbs.dev_attr.max_sge = 2;
    verbs.dev_attr.atomic_cap = IBV_ATOMIC_NONE;
    verbs.dev_attr.vendor_id = 0x15b3;
    VrdmaLimits lim = dp_limits();
    VrdmaIbHostInfo info{};
    char err[128] = "";
    ASSERT_TRUE(vrdma::ib::probe(verbs, "fake0", 1, &lim, &info, err,
                                 sizeof(err)))
        << err;
    EXPECT_EQ(lim.max_mr, 3u);
    EXPECT_EQ(lim.max_sge, 2u);
    EXPECT_EQ(lim.max_qp, dp_limits().max_qp) << "below the host's: kept";
    EXPECT_TRUE(lim.no_atomics);
    EXPECT_STREQ(info.ibdev, "fake0");
    EXPECT_STREQ(info.fw_ver, "fake-1.0");
    EXPECT_EQ(info.port, 1u);
    EXPECT_EQ(info.port_state, uint32_t{IBV_PORT_ACTIVE});
    EXPECT_EQ(info.active_mtu, 1024u);
    EXPECT_EQ(info.vendor_id, 0x15b3u);
    EXPECT_EQ(verbs.contexts(), 1u) << "the probe's device is closed again";

    EXPECT_FALSE(vrdma::ib::probe(verbs, "rxe7", 1, &lim, &info, err,
                                  sizeof(err)));
    EXPECT_NE(std::string(err).find("no host RDMA device 'rxe7'"),
              std::string::npos)
        << err;
}

} // namespace
} // namespace vrdma_test
