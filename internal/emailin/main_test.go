package emailin

import (
	"testing"

	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
