"""An import-linter contract type of our own, for `make lint` (.importlinter): `stdlib_only`, the rule that the
collection's core and the code that runs inside its modules import nothing but the standard library and the packages
the contract allows (e.g. each other)."""

from __future__ import annotations

import sys

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output


class StdlibOnlyContract(Contract):
    """`source_modules` (packages, with everything under them) import only the standard library and the
    `allowed_modules` (packages too). Needs `include_external_packages = True`, so that third-party imports are in the
    graph at all."""

    type_name = "stdlib_only"

    source_modules = fields.ListField(subfield=fields.ModuleField())
    allowed_modules = fields.ListField(subfield=fields.ModuleField(), required=False)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        own = [m.name for m in self.source_modules] + [m.name for m in self.allowed_modules or []]

        def allowed(name: str) -> bool:
            return name.split(".")[0] in sys.stdlib_module_names or any(
                name == p or name.startswith(p + ".") for p in own
            )

        violations = []
        for source in self.source_modules:
            for importer in sorted({source.name} | graph.find_descendants(source.name)):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    if not allowed(imported):
                        lines = [
                            d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)
                        ]
                        violations.append((importer, imported, lines))
        return ContractCheck(kept=not violations, metadata={"violations": violations})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported, lines in check.metadata["violations"]:
            where = ", ".join(f"l.{n}" for n in lines)
            output.print_error(f"{importer} imports {imported} ({where}): not the standard library")
            output.new_line()
