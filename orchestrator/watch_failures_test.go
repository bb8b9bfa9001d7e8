package orchestrator_test

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("failed watch repairs in the dashboard's data", func() {
	It("shows, per run of a host, how many watch repairs failed, the latest error and when", func() {
		t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		reply := protocol.NewFleetReply("motd_r1_aaaaaaaa", "web-1", t0)
		ev := protocol.NewTransactionEvent("e1", protocol.TypeFile, "/etc/motd", "")
		ev.Failed, ev.Errors = true, []string{"is a directory"}
		reply.Events = append(reply.Events, ev)
		data, err := json.Marshal(reply)
		Expect(err).NotTo(HaveOccurred())
		h := nats.Header{}
		h.Set(protocol.HeaderAssignment, "motd")
		h.Set(protocol.HeaderTrigger, protocol.TriggerWatch)
		h.Set(protocol.HeaderWatchFailures, "3")
		h.Set(protocol.HeaderWatchError, "file#/etc/motd: is a directory")
		h.Set(protocol.HeaderWatchFailedAt, t0.Format(time.RFC3339Nano))

		x := orchestrator.NewHistoryIndex(0)
		Expect(x.Add(jsstore.Record{RequestID: reply.RequestID, Identity: "web-1", Data: data, Time: t0, Header: h})).To(Equal(reply.RequestID))
		runs := x.Host("web-1", 0)
		Expect(runs).To(HaveLen(1))
		Expect(runs[0].WatchFailures).To(Equal(3))
		Expect(runs[0].WatchError).To(Equal("file#/etc/motd: is a directory"))
		Expect(runs[0].WatchFailedAt).To(Equal(t0))
	})
})
