package broker

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ccm-fleet/ccm/protocol"
)

// MaxConfigFileSize bounds the configuration file read by LoadConfigFile.
const MaxConfigFileSize = 1 << 20

// LoadConfigFile reads a broker configuration file with DecodeConfigFile
// and validates it. Errors wrap ErrInvalidConfig and name the file.
func LoadConfigFile(path string) (Config, error) {
	c, err := DecodeConfigFile(path)
	if err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("config file %s: %w", path, err)
	}
	return c, nil
}

// DecodeConfigFile reads a broker configuration file (YAML or JSON, with
// the keys of Config: listen, store_dir, cluster, tls, auth_file, site,
// hub, leafnodes, domain, …) strictly (see protocol.DecodeStrict: unknown
// and duplicate keys, anchors and aliases are refused), bounded by
// MaxConfigFileSize, without validating it (command-line flags may still
// complete it). Errors wrap ErrInvalidConfig and name the file and the key.
func DecodeConfigFile(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w: config file %s: %w", ErrInvalidConfig, path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigFileSize+1))
	if err != nil {
		return Config{}, fmt.Errorf("%w: config file %s: %w", ErrInvalidConfig, path, err)
	}
	if len(data) > MaxConfigFileSize {
		return Config{}, fmt.Errorf("%w: config file %s: larger than %d bytes", ErrInvalidConfig, path, MaxConfigFileSize)
	}
	var c Config
	if _, err := protocol.DecodeStrict(data, &c, protocol.Limits{MaxBytes: MaxConfigFileSize}); err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return Config{}, fmt.Errorf("%w: config file %s: %s", ErrInvalidConfig, path, pe.KeyMessage())
		}
		return Config{}, fmt.Errorf("%w: config file %s: %w", ErrInvalidConfig, path, err)
	}
	return c, nil
}
