package auditlog_test

import (
	"encoding/json"
	"reflect"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/auditlog"
	"github.com/ccm-fleet/ccm/protocol"
)

// fill sets v and every exported field below it (v settable) to a value that is
// not empty, strings with characters to escape, so that a field the
// encoder leaves out shows; a field of a kind it does not know fails.
func fill(v reflect.Value, n *int) {
	GinkgoHelper()
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.String:
		v.SetString("v" + string(rune('a'+*n%26)) + " <\"é\\\n&>")
	case reflect.Int:
		v.SetInt(int64(*n))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(v.Index(0), n)
		fill(v.Index(1), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 29, 13, 5, 0, *n, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	default:
		Fail("fill does not know a field of kind " + v.Kind().String() + ": teach it, and the encoder")
	}
}

var _ = Describe("Encode without reflection", func() {
	marshal := func(r *auditlog.Record) string {
		GinkgoHelper()
		b, err := json.Marshal(r)
		Expect(err).NotTo(HaveOccurred())
		return string(b) + "\n"
	}
	encode := func(r *auditlog.Record) string {
		GinkgoHelper()
		b, err := auditlog.Encode(r)
		Expect(err).NotTo(HaveOccurred())
		return string(b)
	}

	It("writes every field encoding/json writes, byte for byte", func() {
		var r auditlog.Record
		n := 0
		fill(reflect.ValueOf(&r).Elem(), &n)
		Expect(r.Result.Error.Field).NotTo(BeEmpty())
		Expect(encode(&r)).To(Equal(marshal(&r)))
	})

	It("leaves out what encoding/json leaves out, and lists no resources as []", func() {
		at := time.Date(2026, 11, 29, 13, 5, 0, 0, time.FixedZone("", 3600))
		for _, r := range []auditlog.Record{
			{Time: at, Resources: []string{}},
			{Time: at, RequestID: "r1", Decision: "accepted", Resources: []string{"file#/etc/motd"}, Result: &auditlog.Result{OK: 1}},
			{Time: at, RequestID: "r2", Decision: "bad_request", Resources: []string{}, Result: &auditlog.Result{Error: protocol.NewError(protocol.CodeBadRequest, "no \xff here")}},
		} {
			Expect(encode(&r)).To(Equal(marshal(&r)))
		}
		Expect(encode(&auditlog.Record{Time: at})).To(ContainSubstring(`"resources":[]`))
	})

	It("refuses a time encoding/json refuses", func() {
		_, err := auditlog.Encode(&auditlog.Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
		Expect(err).To(HaveOccurred())
	})
})
