package scaffoldchoria

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"text/template"

	"github.com/CloudyKit/jet/v6"
	"github.com/kballard/go-shellquote"

	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// renderer renders a scaffold's source into a stage directory the way the
// choria-io/scaffold library does (every file below the source except
// _partials, with write(), render() and post commands), but through the
// template sandbox: each file is one render with its own templates.Budget,
// which the partials it render()s share, so a partial that renders itself
// ends at the depth limit instead of in a stack overflow.
type renderer struct {
	log         *slog.Logger
	engine      string
	source      string // the private copy of the source
	stage       string // where the rendered files go
	left, right string
	skipEmpty   bool
	post        []map[string]string
	goFuncs     template.FuncMap
	jetFuncs    map[string]jet.Func
	data        any
}

// errSkippedEmpty ends the render of a file that rendered only spaces
// under skip_empty.
var errSkippedEmpty = errors.New("skipped rendering")

func (r *renderer) run() error {
	var err error
	if r.stage, err = filepath.Abs(r.stage); err != nil {
		return err
	}
	if err := os.MkdirAll(r.stage, 0o755); err != nil {
		return err
	}
	return filepath.WalkDir(r.source, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == r.source {
			return nil
		}
		if d.Name() == "_partials" {
			return filepath.SkipDir
		}
		out := filepath.Join(r.stage, strings.TrimPrefix(path, r.source))
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		case d.Type().IsRegular():
			return r.renderFile(out, path)
		default:
			return fmt.Errorf("invalid file in source: %v", d.Name())
		}
	})
}

func (r *renderer) renderFile(out, path string) error {
	b := templates.NewBudget()
	res, err := r.renderPath(b, path, r.data)
	switch {
	case errors.Is(err, errSkippedEmpty):
		r.log.Debug("skipping empty file", "file", out)
		return nil
	case err != nil:
		return err
	}
	if err := r.save(out, res); err != nil {
		return err
	}
	if err := r.postFile(out); err != nil {
		return err
	}
	r.log.Debug("rendered", "file", out)
	return nil
}

// renderPath renders the source file at path with data within b.
func (r *renderer) renderPath(b *templates.Budget, path string, data any) ([]byte, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(path)
	var buf bytes.Buffer
	switch r.engine {
	case scaffoldtype.EngineJet:
		vars, _ := data.(jet.VarMap)
		funcs := make(map[string]jet.Func, len(r.jetFuncs)+2)
		for k, f := range r.jetFuncs {
			funcs[k] = f
		}
		funcs["write"] = r.jetWrite(b)
		funcs["render"] = r.jetRender(b)
		err = templates.SandboxJet(&buf, b, templates.JetRender{Name: name, Body: string(body), Left: r.left, Right: r.right, Funcs: funcs, Vars: vars, Dot: data})
	default:
		funcs := make(template.FuncMap, len(r.goFuncs)+2)
		for k, f := range r.goFuncs {
			funcs[k] = f
		}
		funcs["write"] = r.goWrite(b)
		funcs["render"] = r.goRender(b)
		err = templates.SandboxGo(&buf, b, templates.GoRender{Name: name, Body: string(body), Left: r.left, Right: r.right, Funcs: funcs, Data: data})
	}
	if err != nil {
		return nil, err
	}
	if r.skipEmpty && len(bytes.TrimSpace(buf.Bytes())) == 0 {
		return nil, errSkippedEmpty
	}
	return buf.Bytes(), nil
}

// partial renders the source file name (a partial) inside the render
// that b belongs to, one level deeper.
func (r *renderer) partial(b *templates.Budget, name string, data any) (string, error) {
	leave, err := b.Enter()
	if err != nil {
		return "", err
	}
	defer leave()
	path, err := r.sourcePath(name)
	if err != nil {
		return "", err
	}
	res, err := r.renderPath(b, path, data)
	if errors.Is(err, errSkippedEmpty) {
		return "", nil
	}
	return string(res), err
}

// write saves content as the file out below the stage (write() in
// templates), charged to b's output.
func (r *renderer) write(b *templates.Budget, out, content string) error {
	if err := b.Output(int64(len(content))); err != nil {
		return err
	}
	path := filepath.Join(r.stage, out)
	if err := r.save(path, []byte(content)); err != nil {
		return err
	}
	if err := r.postFile(path); err != nil {
		return err
	}
	r.log.Debug("rendered", "file", path)
	return nil
}

func (r *renderer) goWrite(b *templates.Budget) any {
	return func(out, content string) (string, error) { return "", r.write(b, out, content) }
}

func (r *renderer) goRender(b *templates.Budget) any {
	return func(name string, data any) (string, error) { return r.partial(b, name, data) }
}

func (r *renderer) jetWrite(b *templates.Budget) jet.Func {
	return func(a jet.Arguments) reflect.Value {
		a.RequireNumOfArguments("write", 2, 2)
		var out, content string
		if err := a.ParseInto(&out, &content); err != nil {
			a.Panicf("write: %v", err)
		}
		if err := r.write(b, out, content); err != nil {
			a.Panicf("write: %w", err)
		}
		return reflect.ValueOf("")
	}
}

func (r *renderer) jetRender(b *templates.Budget) jet.Func {
	return func(a jet.Arguments) reflect.Value {
		a.RequireNumOfArguments("render", 2, 2)
		res, err := r.partial(b, a.Get(0).String(), a.Get(1).Interface())
		if err != nil {
			a.Panicf("render: %w", err)
		}
		return reflect.ValueOf(res)
	}
}

// sourcePath is the file name names below the source.
func (r *renderer) sourcePath(name string) (string, error) {
	path := filepath.Join(r.source, name)
	if path != r.source && !strings.HasPrefix(path, r.source+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is not in source directory %s", name, r.source)
	}
	return path, nil
}

// save writes a rendered file below the stage.
func (r *renderer) save(out string, content []byte) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(abs, r.stage+string(filepath.Separator)) {
		return fmt.Errorf("%s is not in target directory %s", out, r.stage)
	}
	return os.WriteFile(abs, content, 0o644)
}

// postFile runs the post commands whose glob matches f's base name: {} in
// a command is f, and a command without {} gets f as its last argument.
func (r *renderer) postFile(f string) error {
	for _, p := range r.post {
		for glob, command := range p {
			matched, err := filepath.Match(glob, filepath.Base(f))
			if err != nil {
				return err
			}
			if !matched {
				continue
			}
			parts, err := shellquote.Split(command)
			if err != nil {
				return err
			}
			if len(parts) == 0 {
				return fmt.Errorf("post command for %q is empty", glob)
			}
			var args []string
			placeholder := false
			for _, a := range parts[1:] {
				if strings.Contains(a, "{}") {
					a = strings.ReplaceAll(a, "{}", f)
					placeholder = true
				}
				args = append(args, a)
			}
			if !placeholder {
				args = append(args, f)
			}
			r.log.Debug("post processing", "command", parts[0], "args", args)
			out, err := exec.Command(parts[0], args...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("failed to post process %s\nerror: %w\noutput: %q", f, err, out)
			}
		}
	}
	return nil
}
