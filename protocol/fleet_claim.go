package protocol

import "sync/atomic"

// DecodeFleetRequestClaim is DecodeFleetRequest that also returns, when
// the request is refused, the id it claims as far as the one decode read
// it: the id member when it came before the fault and is a valid request
// id, "" otherwise. A refusal can then be matched by its sender without
// the bytes being parsed a second time, with other rules.
func DecodeFleetRequestClaim(data []byte, limits Limits) (req *FleetRequest, claimed string, err error) {
	var wire fleetRequestWire
	req, err = decodeFleetRequest(data, limits, &wire)
	if err == nil {
		return req, req.ID, nil
	}
	if ValidateRequestID(wire.ID) == nil {
		claimed = wire.ID
	}
	return nil, claimed, err
}

// decodes counts the strict JSON decodes this process has made.
var decodes atomic.Int64

// Decodes returns how many strict JSON decodes (each a pass of the
// decoder over a document, YAML documents after their conversion
// included) this process has made: tests and benchmarks read it around
// one path to pin how often that path decodes.
func Decodes() int64 { return decodes.Load() }
