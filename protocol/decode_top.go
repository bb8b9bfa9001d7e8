package protocol

// decodeTopStrict decodes the documents read in bulk (replies, one per host
// per run; registry entries; announcements) with the rules of DecodeStrict:
// a JSON object, the common case, costs one byte scan (the depth) and one
// decoding pass.
func decodeTopStrict(data []byte, v any, limits Limits) error {
	_, err := decodeDocument(data, v, limits, strictOptions)
	return err
}
