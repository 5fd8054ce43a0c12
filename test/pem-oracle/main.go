// Go's encoding/pem.Decode as the oracle of test/security/go-pem.test.ts. Usage: pem-oracle BATCH,
// BATCH = repeated [u32le length][bytes]; for each input prints "#<i>" then one line per block
// pem.Decode returns (Decode(rest) until nil, as client-go ParseCertsPEM loops): "<hex type> <len(Headers)> <hex bytes>".
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
)

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer w.Flush()
	for i := 0; len(data) > 0; i++ {
		n := binary.LittleEndian.Uint32(data)
		in := data[4 : 4+n]
		data = data[4+n:]
		fmt.Fprintf(w, "#%d\n", i)
		rest := in
		for len(rest) > 0 {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			fmt.Fprintf(w, "%s %d %s\n", hex.EncodeToString([]byte(b.Type)), len(b.Headers), hex.EncodeToString(b.Bytes))
		}
	}
}
