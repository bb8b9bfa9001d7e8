package protocol_test

import (
	"encoding/json"
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("Error classification", func() {
	It("matches its code through any number of wrappers", func() {
		err := fmt.Errorf("host web1: %w", protocol.NewError(protocol.CodeBusy, "queue full"))
		Expect(errors.Is(err, protocol.CodeBusy)).To(BeTrue())
		Expect(errors.Is(err, protocol.CodeForbidden)).To(BeFalse())
		Expect(errors.Is(err, protocol.ErrBadRequest)).To(BeFalse())
	})

	It("matches another *Error of the same code, and of the same field when the target names one", func() {
		_, err := protocol.YAMLToJSON([]byte("a: !!int abc\n"), protocol.Limits{})
		var pe *protocol.Error
		Expect(errors.As(err, &pe)).To(BeTrue())
		Expect(pe.Field).To(Equal("a"))
		Expect(errors.Is(err, &protocol.Error{Code: protocol.CodeBadRequest})).To(BeTrue())
		Expect(errors.Is(err, &protocol.Error{Code: protocol.CodeBadRequest, Field: "a"})).To(BeTrue())
		Expect(errors.Is(err, &protocol.Error{Code: protocol.CodeBadRequest, Field: "ttl"})).To(BeFalse())
		Expect(errors.Is(err, protocol.CodeBadRequest)).To(BeTrue())
		Expect(errors.Is(err, protocol.ErrBadRequest)).To(BeTrue())
	})

	It("keeps the YAML decoder's error reachable instead of editing its text", func() {
		_, err := protocol.YAMLToJSON([]byte("a: !!int abc\n"), protocol.Limits{})
		var pe *protocol.Error
		Expect(errors.As(err, &pe)).To(BeTrue())
		Expect(pe.Field).To(Equal("a"))
		Expect(pe.Reason()).To(Equal("yaml: cannot decode !!str `abc` as a !!int"))
		Expect(errors.Unwrap(err)).To(MatchError("yaml: cannot decode !!str `abc` as a !!int"))

		_, err = protocol.YAMLToJSON([]byte("a: [unclosed\n"), protocol.Limits{})
		Expect(errors.Is(err, protocol.ErrBadRequest)).To(BeTrue())
		Expect(errors.Unwrap(err)).To(MatchError(ContainSubstring("did not find expected")))
	})

	It("renders an error plainly at the edge without losing its class", func() {
		err := fmt.Errorf("assignment web: %w", protocol.NewError(protocol.CodeForbidden, "signer ops may not assign"))
		plain := protocol.Plain(err)
		Expect(plain).To(MatchError("signer ops may not assign"))
		Expect(errors.Is(plain, protocol.CodeForbidden)).To(BeTrue())
		Expect(protocol.Plain(nil)).To(BeNil())
		Expect(protocol.Plain(errors.New("disk full"))).To(MatchError("disk full"))
	})

	It("wraps a cause in its own words, still classified by it, with the field when one is named", func() {
		full := errors.New("replay cache full")
		cause := fmt.Errorf("%w: 3 requests", full)
		e := protocol.Wrap(protocol.CodeBusy, cause)
		Expect(e.Message).To(Equal(protocol.NewError(protocol.CodeBusy, "%s", cause).Message))
		Expect(e.Error()).To(Equal("busy: replay cache full: 3 requests"))
		Expect(errors.Is(e, full)).To(BeTrue())
		Expect(errors.Is(e, protocol.CodeBusy)).To(BeTrue())
		Expect(e.Field).To(BeEmpty())
		Expect(protocol.Wrap(protocol.CodeBusy, nil)).To(BeNil())

		at := protocol.WrapAt(protocol.CodeBadRequest, "ensure.properties.mode", cause)
		Expect(at.Message).To(Equal(cause.Error()))
		Expect(errors.Is(at, &protocol.Error{Code: protocol.CodeBadRequest, Field: "ensure.properties.mode"})).To(BeTrue())
		Expect(errors.Is(at, full)).To(BeTrue())
		b, err := json.Marshal(at)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(b)).To(Equal(`{"code":"bad_request","field":"ensure.properties.mode","message":"replay cache full: 3 requests"}`))
	})
})
