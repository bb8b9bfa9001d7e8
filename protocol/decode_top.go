package protocol

// decodeTopStrict decodes the documents read in bulk (replies, one per host
// per run; registry entries; announcements) with the rules of DecodeStrict.
// A JSON object, the common case, goes straight to the JSON decoder (one
// byte scan for the depth, one decoding pass); anything else takes
// DecodeStrict's path.
func decodeTopStrict(data []byte, v any, limits Limits) error {
	limits = limits.withDefaults()
	if DetectEncoding(data) != EncodingJSON {
		_, err := DecodeStrict(data, v, limits)
		return err
	}
	if err := checkSize(data, limits.MaxBytes); err != nil {
		return err
	}
	return decodeJSON(data, v, limits.MaxDepth, strictOptions)
}
