//go:build ignore

// makescan draws scan.png: grey bars standing in for the lines of a scanned
// page, pixels only, so the PDF made from it has no text layer.
//
//	go run makescan.go scan.png
package main

import (
	"image"
	"image/color"
	"image/png"
	"log"
	"os"
)

func main() {
	img := image.NewGray(image.Rect(0, 0, 200, 260))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	for line := 0; line < 12; line++ {
		y0 := 20 + line*18
		width := 160 - (line%3)*25
		for y := y0; y < y0+8; y++ {
			for x := 20; x < 20+width; x++ {
				img.SetGray(x, y, color.Gray{Y: 60})
			}
		}
	}
	f, err := os.Create(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
