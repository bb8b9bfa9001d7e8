// Package brokertest starts embedded brokers for tests: a random port, a
// JetStream store in the test's temporary directory, nats-server logging off,
// and a cleanup that shuts the broker down when the test ends.
//
// It accepts anything with the few testing methods it uses, so both
// *testing.T and Ginkgo's GinkgoT() work:
//
//	b := brokertest.Start(GinkgoT())
//	nc, err := nats.Connect(b.ClientURL())
package brokertest
