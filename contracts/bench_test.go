package contracts

import (
	"testing"
)

func benchValidate(b *testing.B, kind Kind, file string) {
	data := readFixture(b, file)
	if vs, err := Check(kind, data); err != nil || len(vs) > 0 {
		b.Fatalf("fixture invalid: %v %v", err, vs)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(kind, data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkValidateComplianceReport10: a typical ComplianceReport with 10
// controls (testdata/valid/compliance_report/ten_controls.json).
func BenchmarkValidateComplianceReport10(b *testing.B) {
	r, err := DecodeComplianceReport(readFixture(b, "valid/compliance_report/ten_controls.json"))
	if err != nil || len(r.ControlsEvaluated) != 10 {
		b.Fatalf("want 10 controls: %v", err)
	}
	benchValidate(b, KindComplianceReport, "valid/compliance_report/ten_controls.json")
}

// BenchmarkValidateIncidentDossier20: an IncidentDossier with 20 timeline
// events (testdata/valid/incident_dossier/twenty_events.json).
func BenchmarkValidateIncidentDossier20(b *testing.B) {
	d, err := DecodeIncidentDossier(readFixture(b, "valid/incident_dossier/twenty_events.json"))
	if err != nil || len(d.Timeline) != 20 {
		b.Fatalf("want 20 events: %v", err)
	}
	benchValidate(b, KindIncidentDossier, "valid/incident_dossier/twenty_events.json")
}

func BenchmarkValidateRunRecord(b *testing.B) {
	benchValidate(b, KindRunRecord, "valid/run_record/succeeded.json")
}

// BenchmarkValidateFixtures validates every fixture of testdata/valid, one
// sub-benchmark each (kind/file), to compare with another validator over
// the same documents.
func BenchmarkValidateFixtures(b *testing.B) {
	for _, f := range loadFixtures(b, "valid") {
		b.Run(string(f.kind)+"/"+f.name, func(b *testing.B) {
			b.SetBytes(int64(len(f.data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Validate(f.kind, f.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
