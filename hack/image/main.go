// Command image builds Flotilla's container image from the static flotilla
// binary and the search agent's slim binary beside it
// and writes it as an archive that `ctr images import` and `docker load` accept
// (see internal/image). `make image` runs it.
//
//	go run ./hack/image --binary bin/flotilla --ref ghcr.io/flotilla-dev/flotilla:v0.1.0 --out bin/flotilla-image.tar
package main

import (
	"flag"
	"fmt"
	"os"

	"flotilla.dev/flotilla/internal/image"
)

func main() {
	binary := flag.String("binary", "bin/flotilla", "static flotilla binary (CGO_ENABLED=0) to put in the image")
	ref := flag.String("ref", image.Ref("", "latest"), "name of the image, registry/repository:tag")
	out := flag.String("out", "bin/flotilla-image.tar", "archive to write")
	flag.Parse()
	img, err := image.Build(image.Options{Binary: *binary})
	if err == nil {
		err = image.WriteArchiveFile(*out, image.Named{Ref: *ref, Image: img})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	digest, _ := img.Digest()
	fmt.Printf("%s %s -> %s\n", *ref, digest, *out)
	fmt.Printf("load it with: ctr -n k8s.io images import %s   (or: docker load -i %s)\n", *out, *out)
}
