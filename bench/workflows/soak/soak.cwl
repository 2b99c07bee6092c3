#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: Workflow
label: soak
doc: |
  The soak benchmark's workflow (bench/soak.py): one short step per element of `items`
  (sleep `seconds`, then print "item N") on spot nodes, then `cat` of every line, in order,
  on a reliable node. The joined file tells whether every step ran and kept its output.

$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"

requirements:
  ScatterFeatureRequirement: {}

inputs:
  items: int[]
  seconds: float

outputs:
  joined:
    type: File
    outputSource: gather/joined

steps:
  step:
    scatter: item
    in:
      item: items
      seconds: seconds
    out: [line]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 256
        preempt: true
    run:
      class: CommandLineTool
      baseCommand: [sh, -c, 'sleep "$0"; echo "item $1"']
      inputs:
        seconds:
          type: float
          inputBinding: {position: 1}
        item:
          type: int
          inputBinding: {position: 2}
      stdout: line.txt
      outputs:
        line: stdout

  gather:
    in:
      parts: step/line
    out: [joined]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 256
        preempt: false
    run:
      class: CommandLineTool
      baseCommand: cat
      inputs:
        parts:
          type: File[]
          inputBinding: {position: 1}
      stdout: joined.txt
      outputs:
        joined: stdout
