package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/helpers"
	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// criSocketPath turns a CRI socket flag into a host path; the default is
// the containerd kubeboot runs under the root prefix.
func criSocketPath(fs fsys.FS, flag string) string {
	if flag == "" || flag == config.ManagedCRISocket {
		return fs.Path(node.ContainerdSocket)
	}
	return strings.TrimPrefix(flag, "unix://")
}

func newImagesCommand(g *GlobalFlags, s Streams) *cobra.Command {
	var criSocket string
	cmd := &cobra.Command{
		Use:   "images",
		Short: "List, build, import and export the images a node runs, without any registry",
		Long: `kubeboot never pulls an image. Its own images (pause, CoreDNS, the test
server, the storage add-on's) are built from the kubeboot binary itself and imported into the
node's containerd by init. An air-gapped site carries its own images the
same way: "images export" writes an archive, "images import" loads one
(docker-archive tarballs as "docker save" writes them, or OCI layouts).`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&criSocket, config.FlagCRISocket, "", "containerd socket (default: the containerd kubeboot runs under --root)")
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the images kubeboot builds from its binary",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			for _, img := range images.All() {
				fmt.Fprintf(s.Out, "%s\t%s\n", img.Name, strings.Join(img.Entrypoint, " "))
			}
			return nil
		},
	})
	var output string
	build := &cobra.Command{
		Use:   "build",
		Short: "Write kubeboot's images as an OCI layout archive",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if output == "" {
				return fmt.Errorf("--output is required")
			}
			files, cleanup, err := builtImageFiles()
			if err != nil {
				return err
			}
			defer cleanup()
			tmp := output + ".tmp"
			f, err := os.Create(tmp)
			if err != nil {
				return err
			}
			if err := images.WriteArchive(f, files, images.All()); err != nil {
				f.Close()
				os.Remove(tmp)
				return err
			}
			if err := f.Close(); err != nil {
				os.Remove(tmp)
				return err
			}
			if err := os.Rename(tmp, output); err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "wrote %s\n", output)
			return nil
		},
	}
	build.Flags().StringVarP(&output, "output", "o", "", "Archive to write")
	var builtin bool
	imp := &cobra.Command{
		Use:   "import [ARCHIVE...]",
		Short: "Import image archives (docker save or OCI layout tarballs), or with --builtin the images built from this binary, into the node's containerd",
		Args: func(_ *cobra.Command, args []string) error {
			if builtin != (len(args) == 0) {
				return fmt.Errorf("give the archives to import, or --builtin")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			sock := criSocketPath(g.FS(false, nil), criSocket)
			if builtin {
				files, cleanup, err := builtImageFiles()
				if err != nil {
					return err
				}
				defer cleanup()
				start := time.Now()
				streamed, err := images.ImportBuilt(cmd.Context(), sock, files.Open, images.All())
				if err != nil {
					return err
				}
				fmt.Fprintf(s.Out, "imported %s in %s (%.0f MiB of layers)\n", strings.Join(images.Names(images.All()), " "), time.Since(start).Round(time.Millisecond), float64(streamed)/(1<<20))
				return nil
			}
			for _, a := range args {
				f, err := os.Open(a)
				if err != nil {
					return err
				}
				names, err := images.Import(cmd.Context(), sock, f)
				f.Close()
				if err != nil {
					return fmt.Errorf("importing %s: %w", a, err)
				}
				fmt.Fprintf(s.Out, "imported %s: %s\n", a, strings.Join(names, " "))
			}
			return nil
		},
	}
	imp.Flags().BoolVar(&builtin, "builtin", false, "Import the images built from this binary (those `images list` names), as init does: after `upgrade node`, say, or when some were removed")
	var exportOut string
	exp := &cobra.Command{
		Use:   "export IMAGE...",
		Short: "Export images from the node's containerd into one archive",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if exportOut == "" {
				return fmt.Errorf("--output is required")
			}
			tmp := exportOut + ".tmp"
			f, err := os.Create(tmp)
			if err != nil {
				return err
			}
			err = images.Export(cmd.Context(), criSocketPath(g.FS(false, nil), criSocket), f, args)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Rename(tmp, exportOut)
			}
			if err != nil {
				os.Remove(tmp)
				return err
			}
			fmt.Fprintf(s.Out, "wrote %s\n", exportOut)
			return nil
		},
	}
	exp.Flags().StringVarP(&exportOut, "output", "o", "", "Archive to write")
	cmd.AddCommand(build, imp, exp)
	return cmd
}

// builtImageFiles gives the files kubeboot's images are made of: the
// helpers of images.All, written to a temporary directory
// that cleanup removes.
func builtImageFiles() (images.Files, func(), error) {
	dir, err := os.MkdirTemp("", "kubeboot-images-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	files := images.Files{}
	for _, file := range images.FilesOf(images.All()) {
		p, err := helpers.Extract(file, dir)
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		files[file] = p
	}
	return files, cleanup, nil
}
