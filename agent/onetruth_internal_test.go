package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// spellings returns ways to write key: as is, in other cases, with a
// Unicode letter that case-folds to one of its letters (ſ to s, K to k),
// and with a look-alike suffix.
func spellings(key string) []string {
	out := []string{key, strings.ToUpper(key), strings.ToUpper(key[:1]) + key[1:]}
	mixed := []byte(key)
	for i := range mixed {
		if i%2 == 1 {
			mixed[i] = byte(strings.ToUpper(string(mixed[i]))[0])
		}
	}
	out = append(out, string(mixed))
	if strings.Contains(key, "s") {
		out = append(out, strings.Replace(key, "s", "ſ", 1))
	}
	if strings.Contains(key, "k") {
		out = append(out, strings.Replace(key, "k", "\u212a", 1))
	}
	return append(out, key+"\u200b", key+" ")
}

// genRequest writes the properties of request i as JSON text the way an
// attacker could: keys in any spelling, some twice, nested objects,
// Unicode and now and then invalid UTF-8 in values. Every resource it
// could create is named below dir with the request's own prefix.
func genRequest(rnd *rand.Rand, i int, dir string) (typ, props string) {
	pick := func(keys []string) string {
		if rnd.IntN(3) == 0 {
			return keys[rnd.IntN(len(keys))]
		}
		return keys[0]
	}
	uni := []string{"", "-é", "-名前", "-\u0301", "-ſ"}
	target := filepath.Join(dir, fmt.Sprintf("r%03d%s", i, uni[rnd.IntN(len(uni))]))
	if rnd.IntN(25) == 0 {
		target += "\xff"
	}
	var members []string
	add := func(key, value string) {
		k, _ := json.Marshal(key)
		members = append(members, string(k)+":"+value)
	}
	str := func(s string) string {
		// json.Marshal would replace invalid UTF-8; write such bytes raw.
		if !strings.ContainsRune(s, 0xfffd) && strings.Contains(s, "\xff") {
			return `"` + s + `"`
		}
		b, _ := json.Marshal(s)
		return string(b)
	}
	if rnd.IntN(2) == 0 {
		typ = protocol.TypeExec
		add(pick(spellings("name")), str("/usr/bin/touch "+target))
		switch rnd.IntN(4) {
		case 0:
			add(pick(spellings("provider")), str("shell"))
		case 1:
			add(pick(spellings("provider")), str("posix"))
		}
		if rnd.IntN(3) == 0 {
			add(pick(spellings("timeout")), str("10s"))
		}
	} else {
		typ = protocol.TypeFile
		add(pick(spellings("name")), str(target))
		add(pick(spellings("content")), str("x"+uni[rnd.IntN(len(uni))]))
		add(pick(spellings("owner")), str("root"))
		add(pick(spellings("group")), str("root"))
		add(pick(spellings("mode")), str("0644"))
	}
	if rnd.IntN(4) == 0 {
		// A key again, with another value.
		j := rnd.IntN(len(members))
		k, _, _ := strings.Cut(members[j], ":")
		var key string
		_ = json.Unmarshal([]byte(k), &key)
		add(key, str("/usr/bin/touch "+target+"-dup"))
	}
	if rnd.IntN(5) == 0 {
		add(pick(spellings("control")), `{"if":"true","`+pick(spellings("unless"))+`":"false"}`)
	}
	rnd.Shuffle(len(members), func(a, b int) { members[a], members[b] = members[b], members[a] })
	return typ, "{" + strings.Join(members, ",") + "}"
}

var _ = Describe("One parse, one truth", func() {
	It("evaluates, audits and runs the same resource for 300 generated requests", func() {
		dir := GinkgoT().TempDir()
		work := filepath.Join(dir, "work")
		Expect(os.Mkdir(work, 0o755)).To(Succeed())
		kp, err := nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		pub, err := kp.PublicKey()
		Expect(err).ToNot(HaveOccurred())
		policy, err := ParsePolicy([]byte("signers:\n  - name: ops\n    public_key: " + pub + "\n    allow: [file, exec]\n"))
		Expect(err).ToNot(HaveOccurred())

		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		ready := make(chan struct{})
		a, err := New(Config{Identity: "truth-1", StateDir: filepath.Join(dir, "state")}, nc, engine.New(reg), map[string]any{"os": "debian"},
			WithPolicy(policy), WithReady(func() { close(ready) }))
		Expect(err).ToNot(HaveOccurred())
		var mu sync.Mutex
		observed := map[string][]policyResource{}
		a.gate.judge.(*policyJudge).observe = func(id string, r policyResource) {
			mu.Lock()
			defer mu.Unlock()
			observed[id] = append(observed[id], r)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil())) })
		Eventually(ready).WithTimeout(5 * time.Second).Should(BeClosed())

		client, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(client.Close)
		rnd := rand.New(rand.NewPCG(11, 2026))
		replies := map[string]*protocol.FleetReply{}
		var ran, refused int
		for i := range 300 {
			typ, props := genRequest(rnd, i, work)
			id := fmt.Sprintf("truth-%03d", i)
			req := protocol.NewFleetRequest(id, time.Now(), time.Minute)
			req.Ensure = &protocol.EnsureRequest{Protocol: protocol.EnsureRequestProtocol, Type: typ, Properties: json.RawMessage(props)}
			req.Sender = pub
			req.Reply = client.NewInbox()
			body, err := json.Marshal(req)
			Expect(err).ToNot(HaveOccurred())
			if !json.Valid([]byte(props)) || strings.Contains(props, "\xff") {
				// json.Marshal of a RawMessage re-validates it; put the raw bytes back.
				var err2 error
				body, err2 = rawBody(req, props)
				Expect(err2).ToNot(HaveOccurred())
			}
			signer, sig, err := protocol.Sign(body, kp)
			Expect(err).ToNot(HaveOccurred())
			sub, err := client.SubscribeSync(req.Reply)
			Expect(err).ToNot(HaveOccurred())
			h := nats.Header{}
			h.Set(protocol.HeaderSigner, signer)
			h.Set(protocol.HeaderSignature, sig)
			Expect(client.PublishMsg(&nats.Msg{Subject: protocol.RequestNodeSubject("truth-1"), Reply: req.Reply, Header: h, Data: body})).To(Succeed())
			m, err := sub.NextMsg(10 * time.Second)
			Expect(err).ToNot(HaveOccurred(), "request %s (%s) got no reply", id, props)
			_ = sub.Unsubscribe()
			reply, err := protocol.DecodeFleetReply(m.Data, protocol.Limits{})
			Expect(err).ToNot(HaveOccurred())
			replies[id] = reply

			mu.Lock()
			obs := slices.Clone(observed[id])
			mu.Unlock()
			if len(reply.Events) == 0 {
				refused++
				Expect(reply.Error).ToNot(BeNil(), "request %s: no events and no error", id)
				continue
			}
			ran++
			Expect(reply.Events).To(HaveLen(1))
			ev := reply.Events[0]
			Expect(ev.Provider).ToNot(Equal("shell"), "request %s ran through a shell: %s", id, props)
			// Admission saw the declared resource, the guard the one run:
			// both are the event's.
			Expect(obs).To(HaveLen(2), "request %s: policy evaluations %v", id, obs)
			Expect(obs[0].Ref()).To(Equal(ev.Type+"#"+ev.Name), "request %s: the policy evaluated another resource than ran: %s", id, props)
			Expect(obs[1]).To(Equal(policyResource{Type: ev.Type, Name: ev.Name, Provider: ev.Provider}), "request %s", id)
		}
		GinkgoWriter.Printf("generated requests: %d ran, %d refused\n", ran, refused)
		Expect(ran).To(BeNumerically(">", 30), "the generator makes runnable requests too")
		Expect(refused).To(BeNumerically(">", 30), "the generator makes bad ones too")

		// The audit log names, for every request, the resource that ran.
		audit := map[string][]AuditRecord{}
		for _, line := range readLines(filepath.Join(dir, "state", AuditFileName)) {
			var rec AuditRecord
			Expect(json.Unmarshal([]byte(line), &rec)).To(Succeed())
			audit[rec.RequestID] = append(audit[rec.RequestID], rec)
		}
		created := map[string]bool{}
		for id, reply := range replies {
			if len(reply.Events) == 0 {
				continue
			}
			ev := reply.Events[0]
			lines := audit[id]
			Expect(lines).To(HaveLen(2), "request %s: accepted, then its result", id)
			for _, l := range lines {
				Expect(l.Resources).To(Equal([]string{ev.Type + "#" + ev.Name}), "request %s", id)
			}
			if ev.Type == protocol.TypeFile {
				created[ev.Name] = true
			} else {
				created[strings.TrimPrefix(ev.Name, "/usr/bin/touch ")] = true
			}
		}
		// Nothing exists that a run did not name.
		entries, err := os.ReadDir(work)
		Expect(err).ToNot(HaveOccurred())
		for _, e := range entries {
			Expect(created).To(HaveKey(filepath.Join(work, e.Name())), "%s was made by a request whose event does not name it", e.Name())
		}
	})
})

// rawBody encodes req with its ensure properties as the exact bytes props,
// which may be invalid JSON text of the kind an attacker sends (invalid
// UTF-8); encoding/json would refuse or rewrite them.
func rawBody(req *protocol.FleetRequest, props string) ([]byte, error) {
	const marker = `{"__props__":1}`
	c := *req
	e := *req.Ensure
	e.Properties = json.RawMessage(marker)
	c.Ensure = &e
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, err
	}
	return []byte(strings.Replace(string(b), marker, props, 1)), nil
}
