#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Cut a text file into N line-aligned parts (GNU `split -n l/N`); how many files come out is known only once it ran.
baseCommand: split
arguments:
  - -n
  - l/$(inputs.parts)
  - -d
  - $(inputs.text.path)
  - chunk-
inputs:
  text: File
  parts: int
outputs:
  chunks:
    type: File[]
    outputBinding:
      glob: chunk-*
      outputEval: |
        ${ return self.sort(function(a, b) { return a.basename < b.basename ? -1 : 1; }); }
requirements:
  InlineJavascriptRequirement: {}
