// tenantkit's stand-in for github.com/google/nftables' expr/queue.go, swapped in at build time with
// `go build -overlay` (devenv/node/build.ts writes the overlay). Some kernels, this test
// machine's among them, are built without nft_queue (CONFIG_NFT_QUEUE unset) but with nft_compat and
// xtables' NFQUEUE target. This file keeps the package's Queue API and sends the same packets to the same
// queue through that target instead: the verdicts, the queue number and the bypass flag are unchanged,
// only the kernel module carrying them differs. Listing rules shows them as xtables targets.

package expr

import (
	"encoding/binary"

	"github.com/google/nftables/xt"
	"golang.org/x/sys/unix"
)

type QueueAttribute uint16

type QueueFlag uint16

const (
	QueueNum   QueueAttribute = unix.NFTA_QUEUE_NUM
	QueueTotal QueueAttribute = unix.NFTA_QUEUE_TOTAL
	QueueFlags QueueAttribute = unix.NFTA_QUEUE_FLAGS

	// xtables' NFQ_FLAG_BYPASS and NFQ_FLAG_CPU_FANOUT carry the same bits as nftables' flags.
	QueueFlagBypass QueueFlag = unix.NFT_QUEUE_FLAG_BYPASS
	QueueFlagFanout QueueFlag = unix.NFT_QUEUE_FLAG_CPU_FANOUT
	QueueFlagMask   QueueFlag = unix.NFT_QUEUE_FLAG_MASK
)

// Queue hands a packet to a userspace queue, here as revision 3 of xtables' NFQUEUE target.
type Queue struct {
	Num   uint16
	Total uint16
	Flag  QueueFlag
}

// nfqueueTargetInfo is struct xt_NFQ_info_v3 (queue number, number of queues, flags), padded to the
// 8-byte alignment xtables expects of a target's data.
func (e *Queue) nfqueueTarget() *Target {
	total := e.Total
	if total == 0 {
		total = 1
	}
	info := make(xt.Unknown, 8)
	binary.NativeEndian.PutUint16(info[0:], e.Num)
	binary.NativeEndian.PutUint16(info[2:], total)
	binary.NativeEndian.PutUint16(info[4:], uint16(e.Flag&QueueFlagMask))
	return &Target{Name: "NFQUEUE", Rev: 3, Info: &info}
}

func (e *Queue) marshal(fam byte) ([]byte, error) {
	return e.nfqueueTarget().marshal(fam)
}

func (e *Queue) marshalData(fam byte) ([]byte, error) {
	return e.nfqueueTarget().marshalData(fam)
}

// unmarshal is reached only for a native queue expression (rules this build never writes).
func (e *Queue) unmarshal(fam byte, data []byte) error {
	return nil
}
