/-
  moe-oracle: the MoE routing spec of docs/design.md §1 (The spec) and §6 (The routing
  family), with the dispatch of §7 (The dispatch door) and the SwiGLU expert of §8 (The
  layer door), in Lean 4 core (no Mathlib).

  The names are TorchLean's (`Spec.MoE.beats`, `rank`, `kept`, `keptExperts`,
  `Activation.softmaxVecSpec`, `gatesVecSpec`, `combineSpec`, `forwardSpec`,
  `sparseForwardSpec`, `capacityKeeps`, `switchCapacity`, `switchBalance`), so that
  `grep beats` finds the Lean, the C++ oracle and the vectors together.

  Vectors are `List`s indexed by `Nat` instead of `Fin E → α`: the same functions, cheap
  to evaluate. Out-of-range reads give `Context.zero` (never happens: every index used
  below is `< length`).

  Where the seeds leave an order open, this file fixes it as docs/design.md §1 (The spec) does:
  `keptExperts` lists the kept experts best first; every sum is a left fold seeded with
  zero, in index order.

  Why the small list library below: the WebAssembly Lean evaluates `#eval`/`#guard` with
  its interpreter, which cannot call many core list/array functions (it reports
  "Unknown constant `List.lengthTR._redArg`" and the like), nor take an extern such as
  `Float32.add` as a closure (no `Float32.add._boxed`). Functions defined in this file are
  compiled with it and always evaluate, so the spec uses only them, and the contexts'
  operations are small `@[noinline]` wrappers defined here.

  `regen` runs this file and `Export.lean` as one file (Spec first), so the `#guard`
  checks at the end of this file run on every regeneration: a wrong Lean side fails it.
-/

namespace Lst

def foldl {β γ : Type} (f : γ → β → γ) : γ → List β → γ
  | acc, [] => acc
  | acc, x :: xs => foldl f (f acc x) xs

def len {β : Type} : List β → Nat
  | [] => 0
  | _ :: xs => len xs + 1

def app {β : Type} : List β → List β → List β
  | [], ys => ys
  | x :: xs, ys => x :: app xs ys

def map {β γ : Type} (f : β → γ) : List β → List γ
  | [] => []
  | x :: xs => f x :: map f xs

def filter {β : Type} (p : β → Bool) : List β → List β
  | [] => []
  | x :: xs => if p x then x :: filter p xs else filter p xs

def filterMap {β γ : Type} (f : β → Option γ) : List β → List γ
  | [] => []
  | x :: xs => match f x with
    | some y => y :: filterMap f xs
    | none => filterMap f xs

def any {β : Type} (p : β → Bool) : List β → Bool
  | [] => false
  | x :: xs => p x || any p xs

def all {β : Type} (p : β → Bool) : List β → Bool
  | [] => true
  | x :: xs => p x && all p xs

def find? {β : Type} (p : β → Bool) : List β → Option β
  | [] => none
  | x :: xs => if p x then some x else find? p xs

def getD {β : Type} : List β → Nat → β → β
  | [], _, d => d
  | x :: _, 0, _ => x
  | _ :: xs, n + 1, d => getD xs n d

def take {β : Type} : Nat → List β → List β
  | 0, _ => []
  | _, [] => []
  | n + 1, x :: xs => x :: take n xs

def drop {β : Type} : Nat → List β → List β
  | 0, xs => xs
  | _, [] => []
  | n + 1, _ :: xs => drop n xs

def setAt {β : Type} : List β → Nat → β → List β
  | [], _, _ => []
  | _ :: xs, 0, v => v :: xs
  | x :: xs, n + 1, v => x :: setAt xs n v

def flatMap {β γ : Type} (f : β → List γ) : List β → List γ
  | [] => []
  | x :: xs => app (f x) (flatMap f xs)

def replicate {β : Type} : Nat → β → List β
  | 0, _ => []
  | n + 1, x => x :: replicate n x

/-- `[m, m + 1, …, m + n - 1]` (one cons per element: linear in n). -/
def rangeFrom : Nat → Nat → List Nat
  | _, 0 => []
  | m, n + 1 => m :: rangeFrom (m + 1) n

/-- `[0, 1, …, n - 1]`. -/
def range (n : Nat) : List Nat := rangeFrom 0 n

def zip {β γ : Type} : List β → List γ → List (β × γ)
  | x :: xs, y :: ys => (x, y) :: zip xs ys
  | _, _ => []

def eqBy {β : Type} (eq : β → β → Bool) : List β → List β → Bool
  | [], [] => true
  | x :: xs, y :: ys => eq x y && eqBy eq xs ys
  | _, _ => false

/-- Bool equality by cases (the interpreter has no code for `==` on `Bool`, which goes
through `instBEqOfDecidableEq`). -/
def eqBool : Bool → Bool → Bool
  | true, true => true
  | false, false => true
  | _, _ => false

/-- Nat equality as a function to pass (`Lst.eqBy eqNat`): `==` on a `List Nat` in a
definition generic over a `Context` asks for `instBEqOfDecidableEq._redArg`, which the
interpreter lacks. -/
def eqNat (a b : Nat) : Bool := a == b

def insertSorted (x : Nat) : List Nat → List Nat
  | [] => [x]
  | y :: ys => if x ≤ y then x :: y :: ys else y :: insertSorted x ys

def sort (xs : List Nat) : List Nat := foldl (fun acc x => insertSorted x acc) [] xs

end Lst

/-- A scalar context: TorchLean's `Context` without `exp` (so that `Rat` has one).
`max` is Lean's `maxOfLe` (`if x ≤ y then y else x`); `gtBool x y = decide (x > y)`.
`one` is a field, not derived: the routing family (docs/design.md §6) needs it for the sigmoid
`1 / (1 + exp(0 - x))` and for "scale 1 = no scaling", and no total derivation exists in
every context (`x / x` is 0 at 0 over `Rat`, `exp 0` needs an `ExpContext`). The C++
oracle's `ContextBase::one()` is the literal 1, as here. -/
class Context (α : Type) where
  zero : α
  one : α
  add : α → α → α
  sub : α → α → α
  mul : α → α → α
  div : α → α → α
  max : α → α → α
  gtBool : α → α → Bool

/-- A context with an exponential: `Float` and `Float32`, not `Rat`. -/
class ExpContext (α : Type) extends Context α where
  exp : α → α

/-! The operations of each context, one `@[noinline]` definition each (see the top). -/

@[noinline] def f64zero : Float := Float.ofBits 0
@[noinline] def f64one : Float := Float.ofBits 0x3ff0000000000000
@[noinline] def f64add (x y : Float) : Float := x + y
@[noinline] def f64sub (x y : Float) : Float := x - y
@[noinline] def f64mul (x y : Float) : Float := x * y
@[noinline] def f64div (x y : Float) : Float := x / y
@[noinline] def f64max (x y : Float) : Float := if x ≤ y then y else x
@[noinline] def f64gt (x y : Float) : Bool := decide (x > y)
@[noinline] def f64exp (x : Float) : Float := Float.exp x

@[noinline] def f32zero : Float32 := Float32.ofBits 0
@[noinline] def f32one : Float32 := Float32.ofBits 0x3f800000
@[noinline] def f32add (x y : Float32) : Float32 := x + y
@[noinline] def f32sub (x y : Float32) : Float32 := x - y
@[noinline] def f32mul (x y : Float32) : Float32 := x * y
@[noinline] def f32div (x y : Float32) : Float32 := x / y
@[noinline] def f32max (x y : Float32) : Float32 := if x ≤ y then y else x
@[noinline] def f32gt (x y : Float32) : Bool := decide (x > y)
@[noinline] def f32exp (x : Float32) : Float32 := Float32.exp x
@[noinline] def f32toF64 (x : Float32) : Float := x.toFloat
@[noinline] def f32bits (x : Float32) : Nat := x.toBits.toNat
@[noinline] def f64bits (x : Float) : Nat := x.toBits.toNat
@[noinline] def f32isNaN (x : Float32) : Bool := x.isNaN
@[noinline] def f64isNaN (x : Float) : Bool := x.isNaN

@[noinline] def ratZero : Rat := 0
@[noinline] def ratOne : Rat := 1
@[noinline] def ratAdd (x y : Rat) : Rat := x + y
@[noinline] def ratSub (x y : Rat) : Rat := x - y
@[noinline] def ratMul (x y : Rat) : Rat := x * y
@[noinline] def ratDiv (x y : Rat) : Rat := x / y
@[noinline] def ratMax (x y : Rat) : Rat := if x ≤ y then y else x
@[noinline] def ratGt (x y : Rat) : Bool := decide (x > y)
@[noinline] def ratOfNat (n : Nat) : Rat := (n : Rat)
@[noinline] def ratEq (x y : Rat) : Bool := x.num == y.num && x.den == y.den

instance : ExpContext Float where
  zero := f64zero
  one := f64one
  add := f64add
  sub := f64sub
  mul := f64mul
  div := f64div
  max := f64max
  gtBool := f64gt
  exp := f64exp

instance : ExpContext Float32 where
  zero := f32zero
  one := f32one
  add := f32add
  sub := f32sub
  mul := f32mul
  div := f32div
  max := f32max
  gtBool := f32gt
  exp := f32exp

instance : Context Rat where
  zero := ratZero
  one := ratOne
  add := ratAdd
  sub := ratSub
  mul := ratMul
  div := ratDiv
  max := ratMax
  gtBool := ratGt

namespace Spec.MoE

variable {α : Type} [Context α]

/-- Score of expert `i` (zero past the end; callers stay in range). -/
def score (s : List α) (i : Nat) : α := Lst.getD s i Context.zero

/-- `beats s j i`: expert `j` outranks expert `i`; exact ties go to the lower index
(`beats_eq_true`: `s j > s i ∨ (j < i ∧ ¬ s i > s j)`). -/
def beats (s : List α) (j i : Nat) : Bool :=
  Context.gtBool (score s j) (score s i) ||
    (decide (j < i) && !(Context.gtBool (score s i) (score s j)))

/-- `beats` given the two scores: `beatsAt (s j) j (s i) i = beats s j i`. -/
def beatsAt (sj : α) (j : Nat) (si : α) (i : Nat) : Bool :=
  Context.gtBool sj si || (decide (j < i) && !(Context.gtBool si sj))

/-- The experts with their scores, `[(0, s₀), (1, s₁), …]`: the counts below walk this list
once instead of reading `score s j` (a walk of j cells) for every j, so that a rank costs E
steps, not E²/2 (the vectors at E = 384 need it; the value is the same). -/
def indexed (s : List α) : List (Nat × α) := Lst.zip (Lst.range (Lst.len s)) s

/-- `rank s i`: how many experts beat `i` (0 = best; `rank_lt`, `rank_injective`): the
experts j with `beats s j i`, counted in index order. -/
def rank (s : List α) (i : Nat) : Nat :=
  let si := score s i
  Lst.foldl (fun n (js : Nat × α) => if beatsAt js.2 js.1 si i then n + 1 else n) 0 (indexed s)

/-- All ranks, in expert order. -/
def ranks (s : List α) : List Nat := Lst.map (rank s) (Lst.range (Lst.len s))

/-- `kept k s i`: expert `i` is among the best `k` (`card_kept`: `min k E` are kept). -/
def kept (k : Nat) (s : List α) (i : Nat) : Bool := decide (rank s i < k)

/-- The kept experts, best first (`length_keptExperts`: `min k E` of them): position `r`
holds the expert of rank `r`. -/
def keptExperts (k : Nat) (s : List α) : List Nat :=
  let r := ranks s
  let E := Lst.len s
  Lst.filterMap (fun pos => Lst.find? (fun i => Lst.getD r i 0 == pos) (Lst.range E))
    (Lst.range (min k E))

/-- Left fold of `add` seeded with zero, in index order: `((0 + v₀) + v₁) + …`. -/
def sumSpec (v : List α) : α := Lst.foldl Context.add Context.zero v

end Spec.MoE

namespace Activation

variable {α : Type} [Context α]

/-- Every intermediate of TorchLean's `softmaxVecSpec`: the max `m`, the exponentials
`exps`, the denominator `denom` and the output `out`. -/
structure SoftmaxTrace (α : Type) where
  m : α
  exps : List α
  denom : α
  out : List α

/-- `softmaxVecSpec` with the exponential supplied, in TorchLean's order of operations:
n = 0 gives x; else m = left fold of `max` over x₀..xₙ₋₁ seeded with x₀,
eᵢ = exp(xᵢ - m), d = ((0 + e₀) + e₁) + …, outᵢ = eᵢ / d (one division each). -/
def softmaxTraceWith (expFn : α → α) (x : List α) : SoftmaxTrace α :=
  match x with
  | [] => { m := Context.zero, exps := [], denom := Context.zero, out := [] }
  | x0 :: _ =>
    let m := Lst.foldl Context.max x0 x
    let es := Lst.map (fun xi => expFn (Context.sub xi m)) x
    let d := Spec.MoE.sumSpec es
    { m := m, exps := es, denom := d, out := Lst.map (fun e => Context.div e d) es }

/-- `softmaxVecSpec` with the exponential supplied: the output of the trace. -/
def softmaxVecSpecWith (expFn : α → α) (x : List α) : List α := (softmaxTraceWith expFn x).out

/-- TorchLean's `softmaxVecSpec`. -/
def softmaxVecSpec [ExpContext α] (x : List α) : List α :=
  (softmaxTraceWith ExpContext.exp x).out

end Activation

namespace Spec.MoE

variable {α : Type} [Context α]

/-- Gates from probabilities `p`: `p e / (sum of p j over kept j, index order)` where
`e` is kept on `p`, else zero (`getScalar_gatesVecSpec`). -/
def gatesFromProbs (k : Nat) (p : List α) : List α :=
  let idx := Lst.range (Lst.len p)
  let mask := Lst.map (kept k p) idx
  let total := sumSpec (Lst.map (score p) (Lst.filter (fun j => Lst.getD mask j false) idx))
  Lst.map (fun e => if Lst.getD mask e false then Context.div (score p e) total
    else Context.zero) idx

/-- `gatesVecSpec` with the exponential supplied (routing is on the probabilities). -/
def gatesVecSpecWith (expFn : α → α) (k : Nat) (logits : List α) : List α :=
  gatesFromProbs k (Activation.softmaxTraceWith expFn logits).out

/-- TorchLean's `gatesVecSpec k logits`. -/
def gatesVecSpec [ExpContext α] (k : Nat) (logits : List α) : List α :=
  gatesVecSpecWith ExpContext.exp k logits

/-- `combineSpec g outs`, coordinate c: `((0 + g₀·outs₀[c]) + g₁·outs₁[c]) + …`
(`combineSpec_apply`). The output length is that of `outs₀` (empty when E = 0). -/
def combineSpec (g : List α) (outs : List (List α)) : List α :=
  let dim := Lst.len (Lst.getD outs 0 [])
  Lst.map (fun c => sumSpec (Lst.map (fun e =>
      Context.mul (score g e) (score (Lst.getD outs e []) c)) (Lst.range (Lst.len outs))))
    (Lst.range dim)

/-- The dense layer given the router's probabilities `p` (no `exp` needed, so it runs over
`Rat` too): every expert runs, `combineSpec (gatesFromProbs k p)` of their outputs. -/
def forwardSpecFromProbs (k : Nat) (p : List α) (experts : Nat → List α → List α)
    (x : List α) : List α :=
  combineSpec (gatesFromProbs k p) (Lst.map (fun e => experts e x) (Lst.range (Lst.len p)))

/-- Mixtral's sparse block given the router's probabilities `p`: only the experts kept on
`p` run; coordinate c is `((0 + g_a·out_a[c]) + g_b·out_b[c]) + …` over the kept experts
in index order (`forwardSpec_eq_sparseForwardSpec` over ℝ, and exactly over ℚ). The output
has the experts' output shape even when nothing is kept (k = 0): zeros. -/
def sparseForwardSpecFromProbs (k : Nat) (p : List α) (experts : Nat → List α → List α)
    (x : List α) : List α :=
  let g := gatesFromProbs k p
  let keptIdx := Lst.filter (kept k p) (Lst.range (Lst.len p))
  let dim := if Lst.len p == 0 then 0 else Lst.len (experts 0 x)
  let outs := Lst.map (fun e => (e, experts e x)) keptIdx
  Lst.map (fun c => sumSpec (Lst.map (fun (eo : Nat × List α) =>
      Context.mul (score g eo.1) (score eo.2 c)) outs)) (Lst.range dim)

/-- The dense layer with the exponential supplied: every expert runs. -/
def forwardSpecWith (expFn : α → α) (k : Nat) (router : List α → List α)
    (experts : Nat → List α → List α) (x : List α) : List α :=
  forwardSpecFromProbs k (Activation.softmaxTraceWith expFn (router x)).out experts x

/-- `forwardSpec k router experts x`: dense, `combineSpec (gatesVecSpec k (router x))`. -/
def forwardSpec [ExpContext α] (k : Nat) (router : List α → List α)
    (experts : Nat → List α → List α) (x : List α) : List α :=
  forwardSpecWith ExpContext.exp k router experts x

/-- Mixtral's sparse block with the exponential supplied: only the experts kept on the
probabilities run (`sparseForwardSpecFromProbs`). -/
def sparseForwardSpecWith (expFn : α → α) (k : Nat) (router : List α → List α)
    (experts : Nat → List α → List α) (x : List α) : List α :=
  sparseForwardSpecFromProbs k (Activation.softmaxTraceWith expFn (router x)).out experts x

/-- `sparseForwardSpec k router experts x`. -/
def sparseForwardSpec [ExpContext α] (k : Nat) (router : List α → List α)
    (experts : Nat → List α → List α) (x : List α) : List α :=
  sparseForwardSpecWith ExpContext.exp k router experts x

/-! ### SwiGLU experts (the experts of Mixtral, DeepSeek, Qwen MoE and Llama 4; docs/design.md §8)
`y = W2 (silu(W1 x) * (W3 x))`: W1 and W3 have I rows of length H, W2 has H rows of length I.
Every dot product is a left fold from zero in index order, as `sumSpec`. -/

/-- The dot product `((0 + w₀·x₀) + w₁·x₁) + …` over the indices of `x` (zero past the
end of `w`). -/
def dotSpec (w x : List α) : α :=
  sumSpec (Lst.map (fun j => Context.mul (score w j) (score x j)) (Lst.range (Lst.len x)))

/-- SiLU with the exponential supplied, in this order of operations: `a / (1 + exp(0 - a))`
(one subtraction, one exp, one add, one division; `0 - a` is the negation, as in
`sigmoidSpecWith`). -/
def siluWith (expFn : α → α) (a : α) : α :=
  Context.div a (Context.add Context.one (expFn (Context.sub Context.zero a)))

/-- `silu a = a / (1 + exp(0 - a))`. -/
def silu [ExpContext α] (a : α) : α := siluWith ExpContext.exp a

/-- One SwiGLU expert with the exponential supplied: hidden unit i is
`siluWith expFn (dotSpec w1ᵢ x) * dotSpec w3ᵢ x` (i over the rows of `w1`), output c is
`dotSpec w2_c hidden`. -/
def swigluExpertWith (expFn : α → α) (w1 w3 w2 : List (List α)) (x : List α) : List α :=
  let hidden := Lst.map (fun i => Context.mul (siluWith expFn (dotSpec (Lst.getD w1 i []) x))
      (dotSpec (Lst.getD w3 i []) x)) (Lst.range (Lst.len w1))
  Lst.map (fun row => dotSpec row hidden) w2

/-- `swigluExpert w1 w3 w2 x = W2 (silu(W1 x) * (W3 x))`. -/
def swigluExpert [ExpContext α] (w1 w3 w2 : List (List α)) (x : List α) : List α :=
  swigluExpertWith ExpContext.exp w1 w3 w2 x

/-- `capacityKeeps C group`: token t (given by its expert) is kept iff fewer than C
earlier tokens of the group went to its expert (`capacity_depends_on_devices`). -/
def capacityKeeps (C : Nat) (group : List Nat) : List Bool :=
  Lst.map (fun t =>
    let e := Lst.getD group t 0
    decide (Lst.len (Lst.filter (· == e) (Lst.take t group)) < C)) (Lst.range (Lst.len group))

/-! ### Dispatch (the `moe_align_block_size` of serving engines; docs/design.md §7)

Slot s = t * k + j holds token t's j-th expert, `none` for an empty slot (the C ABI's -1),
which dispatch skips. Each expert's kept slots are listed in slot order, experts in
increasing order, each list padded to a multiple of the block with the value `T * k` (the
number of slots, no slot's index); an expert with no kept slot takes no block. With a
capacity C an expert keeps its first C non-empty slots in slot order (`capacityKeeps` over
the non-empty slots), so a slot's fate depends only on the slots before it. -/

/-- The non-empty slots in slot order, as (slot, expert). -/
def dispatchSlots (ids : List (Option Nat)) : List (Nat × Nat) :=
  Lst.filterMap (fun (so : Nat × Option Nat) => match so.2 with
    | some e => some (so.1, e)
    | none => none) (Lst.zip (Lst.range (Lst.len ids)) ids)

/-- The slots dispatch keeps, in slot order: with a capacity C (`some C`), those
`capacityKeeps C` keeps over the experts of the non-empty slots in slot order; without one
(`none`, the C ABI's capacity < 0), every non-empty slot. -/
def dispatchKept (C : Option Nat) (ids : List (Option Nat)) : List (Nat × Nat) :=
  let slots := dispatchSlots ids
  match C with
  | none => slots
  | some c =>
    Lst.filterMap (fun (sk : (Nat × Nat) × Bool) => if sk.2 then some sk.1 else none)
      (Lst.zip slots (capacityKeeps c (Lst.map (fun (se : Nat × Nat) => se.2) slots)))

/-- The least multiple of `block` that is ≥ n (the domain is block ≥ 1; block 0 gives 0). -/
def padTo (block n : Nat) : Nat := (n + block - 1) / block * block

/-- Expert e's kept slots, in slot order. -/
def expertSlots (kept : List (Nat × Nat)) (e : Nat) : List Nat :=
  Lst.map (fun (se : Nat × Nat) => se.1) (Lst.filter (fun (se : Nat × Nat) => se.2 == e) kept)

/-- A dispatch: `sortedSlots` (its length is the C ABI's rows) and the expert of each block. -/
structure DispatchLayout where
  sortedSlots : List Nat
  blockExpert : List Nat

/-- The layout of the kept slots `kept` (slot, expert) of `n` slots over E experts: expert
0's kept slots then padding (the value n) up to `padTo block`, then expert 1's, and so on;
`blockExpert` names each block's expert. -/
def dispatchLayoutOf (E block n : Nat) (kept : List (Nat × Nat)) : DispatchLayout :=
  let lists := Lst.map (fun e =>
    let l := expertSlots kept e
    (e, l, padTo block (Lst.len l))) (Lst.range E)
  { sortedSlots := Lst.flatMap (fun (x : Nat × List Nat × Nat) =>
      Lst.app x.2.1 (Lst.replicate (x.2.2 - Lst.len x.2.1) n)) lists,
    blockExpert := Lst.flatMap (fun (x : Nat × List Nat × Nat) =>
      Lst.replicate (x.2.2 / block) x.1) lists }

/-- `dispatchSpec E block C ids`: the spec's dispatch of the slots `ids` (T * k of them) over
E experts (the domain is `dispatchValid`). -/
def dispatchSpec (E block : Nat) (C : Option Nat) (ids : List (Option Nat)) : DispatchLayout :=
  dispatchLayoutOf E block (Lst.len ids) (dispatchKept C ids)

/-- The padded length, `rows` of the C ABI. -/
def dispatchRows (E block : Nat) (C : Option Nat) (ids : List (Option Nat)) : Nat :=
  Lst.len (dispatchSpec E block C ids).sortedSlots

/-- The dispatch's domain, rule by rule: a block of at least one row, and every id empty or
an expert below E (outside it the C ABI answers MOE_ROUTE_EBADPARAMS). -/
def dispatchRules (E block : Nat) (ids : List (Option Nat)) : List (String × Bool) :=
  [("blockPositive", decide (1 ≤ block)),
   ("idsInRange", Lst.all (fun (o : Option Nat) => match o with
      | some e => decide (e < E)
      | none => true) ids)]

def dispatchValid (E block : Nat) (ids : List (Option Nat)) : Bool :=
  Lst.all (fun (r : String × Bool) => r.2) (dispatchRules E block ids)

/-- The names of the rules `dispatchValid` finds broken (empty exactly when it holds). -/
def dispatchBrokenRules (E block : Nat) (ids : List (Option Nat)) : List String :=
  Lst.map (fun (r : String × Bool) => r.1)
    (Lst.filter (fun (r : String × Bool) => !r.2) (dispatchRules E block ids))

/-- `dispatchKept` in one pass, counting each expert's kept slots (E * slots steps, where
`capacityKeeps` takes slots²): what the exporter evaluates on thousands of slots. The same
as `dispatchKept` where `dispatchValid` holds (an id ≥ E has no counter here); a `#guard`
below and the exporter (on every case of up to 1,024 slots) check it against `dispatchKept`. -/
def dispatchKeptCounted (E : Nat) (C : Option Nat) (ids : List (Option Nat)) :
    List (Nat × Nat) :=
  match C with
  | none => dispatchSlots ids
  | some c =>
    let step := fun (acc : List Nat × List (Nat × Nat)) (se : Nat × Nat) =>
      let n := Lst.getD acc.1 se.2 0
      if n < c then (Lst.setAt acc.1 se.2 (n + 1), se :: acc.2) else acc
    let keptRev := (Lst.foldl step (Lst.replicate E 0, []) (dispatchSlots ids)).2
    Lst.foldl (fun (out : List (Nat × Nat)) (se : Nat × Nat) => se :: out) [] keptRev

/-- Every expert's padded list is a whole number of blocks. -/
theorem padTo_mod_block (block n : Nat) : padTo block n % block = 0 := by
  simp [padTo, Nat.mul_mod_left]

/-- Switch's capacity with capacity factor one: ⌈n / E⌉ (0 when E = 0, Lean's n / 0). -/
def switchCapacity (E n : Nat) : Nat := (n + E - 1) / E

/-- Switch's balancing loss on a group of tokens (expert, router probabilities):
E · Σₑ (fraction of tokens sent to e) · (mean probability of e)
(`balance_depends_on_devices`). Rat's x / 0 = 0, so an empty group gives 0. -/
def switchBalance (E : Nat) (group : List (Nat × List Rat)) : Rat :=
  let n := ratOfNat (Lst.len group)
  let perExpert := Lst.map (fun e =>
    let f := ratOfNat (Lst.len (Lst.filter (fun (t : Nat × List Rat) => t.1 == e) group))
    let P := Lst.foldl ratAdd ratZero
      (Lst.map (fun (t : Nat × List Rat) => Lst.getD t.2 e ratZero) group)
    ratMul (ratDiv f n) (ratDiv P n)) (Lst.range E)
  ratMul (ratOfNat E) (Lst.foldl ratAdd ratZero perExpert)

end Spec.MoE

/-! ## The routing family of today's open MoE models (docs/design.md §6, The routing family)

Scores `s` (softmax or sigmoid of the logits), selection keys `c = s + b` (exactly `s`
without a bias), optional groups of experts ranked by a group score, the k best eligible
experts by `beats` over `c`, and gates from the unbiased scores, optionally renormalised
over the kept experts (index order) and times a scale. Mixtral, GPT-OSS and Qwen3 are
softmax, no bias, one group, renormalised, scale 1 (`routeGatesWith_eq_gatesVecSpecWith` below: then
this is `gatesVecSpec`); Qwen1.5/2-MoE do not renormalise; DeepSeek-V2 groups by max and
scales; DeepSeek-V3/R1 are sigmoid, bias, 8 groups, top 4 by the sum of their top 2,
renormalised, scale 2.5; Kimi K2 and GLM-4.5 the same with one group; Llama 4 is sigmoid,
top-1, raw. Every definition is total: outside `paramsValid` it still gives a value (a
group count of 0 puts every expert in group 0, a short bias reads zeros past its end). -/

namespace Activation

variable {α : Type} [Context α]

/-- The logistic sigmoid with the exponential supplied, in this order of operations:
`1 / (1 + exp(0 - x))` (one exp, one add, one division; `0 - x` is the negation, so that
it is a `Context` operation; it differs from `-x` only in the sign of a zero, whose exp
is 1 either way). -/
def sigmoidSpecWith (expFn : α → α) (x : α) : α :=
  Context.div Context.one (Context.add Context.one (expFn (Context.sub Context.zero x)))

/-- `sigmoidSpec x = 1 / (1 + exp(0 - x))`. -/
def sigmoidSpec [ExpContext α] (x : α) : α := sigmoidSpecWith ExpContext.exp x

end Activation

namespace Spec.MoE

/-- How the router turns logits into scores. -/
inductive ScoreFn where
  | softmax
  | sigmoid

/-- How a group of experts is scored: the max of its keys, or the sum of its best two. -/
inductive GroupScore where
  | max
  | top2Sum

/-- The router's parameters (vLLM's `grouped_topk` / the C ABI's `moe_route_params_v2`):
`k` experts kept; `score`; `bias` (one per expert, or none: then `c = s` exactly);
`groups` G (1 = no grouping); `topkGroups` groups kept; `groupScore` (ignored when G = 1);
`renormalize`; `scale` (1 = none). -/
structure RouteParams (α : Type) where
  k : Nat
  score : ScoreFn
  bias : Option (List α)
  groups : Nat
  topkGroups : Nat
  groupScore : GroupScore
  renormalize : Bool
  scale : α

variable {α : Type} [Context α]

/-- The domain for E experts: a bias, if any, has E entries; G ≥ 1 divides E (E = 0: any
G ≥ 1); 1 ≤ topkGroups ≤ G; top-2-sum groups of more than one have at least two experts.
(k is any `Nat`; the C ABI also asks for a finite scale, which a `Context` cannot test.) -/
def paramsValid (E : Nat) (p : RouteParams α) : Bool :=
  (match p.bias with
    | none => true
    | some b => Lst.len b == E) &&
  decide (1 ≤ p.groups) && E % p.groups == 0 &&
  decide (1 ≤ p.topkGroups) && decide (p.topkGroups ≤ p.groups) &&
  (match p.groupScore with
    | .max => true
    | .top2Sum => decide (p.groups ≤ 1) || decide (2 ≤ E / p.groups))

/-- The six conjuncts of `paramsValid`, each evaluated on its own and named, in its order.
(G = 0 can never fail alone: every `topkGroups ≥ 1` then exceeds G too; and E % 0 = E, so
with E > 0 it also fails `groupsDivideExperts`.) -/
def paramsRules (E : Nat) (p : RouteParams α) : List (String × Bool) :=
  [("biasLength", match p.bias with
      | none => true
      | some b => Lst.len b == E),
   ("groupsPositive", decide (1 ≤ p.groups)),
   ("groupsDivideExperts", E % p.groups == 0),
   ("topkGroupsPositive", decide (1 ≤ p.topkGroups)),
   ("topkGroupsAtMostGroups", decide (p.topkGroups ≤ p.groups)),
   ("top2SumGroupsOfTwo", match p.groupScore with
      | .max => true
      | .top2Sum => decide (p.groups ≤ 1) || decide (2 ≤ E / p.groups))]

/-- The names of the rules of `paramsValid` that `p` breaks for E experts (empty exactly
when `paramsValid E p`; Export.lean checks that on every exported case). -/
def paramsBrokenRules (E : Nat) (p : RouteParams α) : List String :=
  Lst.map (fun (r : String × Bool) => r.1)
    (Lst.filter (fun (r : String × Bool) => !r.2) (paramsRules E p))

end Spec.MoE

namespace Activation

variable {α : Type} [Context α]

/-- The scores with the exponential supplied: `softmaxVecSpecWith`, or `sigmoidSpecWith`
of each logit (one exp each, in index order). -/
def scoresSpecWith (expFn : α → α) (f : Spec.MoE.ScoreFn) (logits : List α) : List α :=
  match f with
  | .softmax => Activation.softmaxVecSpecWith expFn logits
  | .sigmoid => Lst.map (Activation.sigmoidSpecWith expFn) logits

/-- The scores: `softmaxVecSpec`, or `sigmoidSpec` of each logit. -/
def scoresSpec [ExpContext α] (f : Spec.MoE.ScoreFn) (logits : List α) : List α :=
  scoresSpecWith ExpContext.exp f logits

end Activation

namespace Spec.MoE

variable {α : Type} [Context α]

/-- The selection keys: `c_e = s_e + b_e` with a bias (zero past the bias's end), else
`s` itself (no addition, so no `0 + -0` turns a `-0` into `+0`). -/
def biasedKeys (bias : Option (List α)) (s : List α) : List α :=
  match bias with
  | none => s
  | some b => Lst.map (fun (sb : α × α) => Context.add sb.1 sb.2)
      (Lst.zip s (Lst.app b (Lst.replicate (Lst.len s - Lst.len b) Context.zero)))

/-- The experts of group g out of G over E experts: `[g·E/G, (g+1)·E/G)`. -/
def groupMembers (E G g : Nat) : List Nat :=
  Lst.map (fun j => g * (E / G) + j) (Lst.range (E / G))

/-- The group of expert e: `e / (E/G)` (0 for every expert when E/G = 0). -/
def groupOf (E G e : Nat) : Nat := e / (E / G)

/-- The keys of group g, in index order: those of `groupMembers`, the E/G keys from
g·E/G on (taken from the list in one walk rather than read one `score` at a time). -/
def groupKeys (c : List α) (G g : Nat) : List α :=
  let n := Lst.len c / G
  Lst.take n (Lst.drop (g * n) c)

/-- `groupMax c G g`: the left fold of `max` over the group's keys seeded with its first
key (softmax's max; zero for an empty group, which only an invalid G makes). -/
def groupMax (c : List α) (G g : Nat) : α :=
  match groupKeys c G g with
  | [] => Context.zero
  | x0 :: xs => Lst.foldl Context.max x0 (x0 :: xs)

/-- `groupTop2Sum c G g`: the group's best and second keys by `beats` within the group
(ties to the lower index), summed best first as `sumSpec` does: `(0 + c_best) + c_second`.
A group of one gives its one key as it is; an empty group zero. -/
def groupTop2Sum (c : List α) (G g : Nat) : α :=
  let keys := groupKeys c G g
  match keptExperts 2 keys with
  | [a, b] => Context.add (Context.add Context.zero (score keys a)) (score keys b)
  | [a] => score keys a
  | _ => Context.zero

/-- The score of every group `0 … G-1`. -/
def groupScores (gs : GroupScore) (G : Nat) (c : List α) : List α :=
  Lst.map (fun g => match gs with
    | .max => groupMax c G g
    | .top2Sum => groupTop2Sum c G g) (Lst.range G)

/-- The kept groups, best first: `keptExperts topkGroups` over the group scores (ties to
the lower group index). With one group, that group (the experts are then all eligible
whatever the group score, `eligible`). -/
def keptGroups (p : RouteParams α) (c : List α) : List Nat :=
  keptExperts p.topkGroups (groupScores p.groupScore p.groups c)

/-- `eligible` given the group scores `gsc` (computed once by the callers below). -/
def eligibleIn (p : RouteParams α) (E : Nat) (gsc : List α) (e : Nat) : Bool :=
  decide (p.groups ≤ 1) || kept p.topkGroups gsc (groupOf E p.groups e)

/-- `eligible p c e`: expert e's group is kept (`kept topkGroups (groupScores ..)`); with
G = 1 every expert is eligible. -/
def eligible (p : RouteParams α) (c : List α) (e : Nat) : Bool :=
  eligibleIn p (Lst.len c) (groupScores p.groupScore p.groups c) e

/-- `routeRank` given the group scores. -/
def routeRankIn (p : RouteParams α) (c : List α) (gsc : List α) (e : Nat) : Nat :=
  let E := Lst.len c
  let ce := score c e
  Lst.foldl (fun n (jc : Nat × α) =>
    if eligibleIn p E gsc jc.1 && beatsAt jc.2 jc.1 ce e then n + 1 else n) 0 (indexed c)

/-- `routeRank p c e`: how many eligible experts beat e on the keys `c`. -/
def routeRank (p : RouteParams α) (c : List α) (e : Nat) : Nat :=
  routeRankIn p c (groupScores p.groupScore p.groups c) e

/-- `routeKept` given the group scores. -/
def routeKeptIn (p : RouteParams α) (c : List α) (gsc : List α) (e : Nat) : Bool :=
  eligibleIn p (Lst.len c) gsc e && decide (routeRankIn p c gsc e < p.k)

/-- `routeKept p c e`: e is eligible and among the k best eligible experts; exactly
`min k (number eligible)` are kept (for keys without NaN). -/
def routeKept (p : RouteParams α) (c : List α) (e : Nat) : Bool :=
  routeKeptIn p c (groupScores p.groupScore p.groups c) e

/-- `eligibleIn` of every expert, in expert order. -/
def eligibleMaskIn (p : RouteParams α) (E : Nat) (gsc : List α) : List Bool :=
  Lst.map (eligibleIn p E gsc) (Lst.range E)

/-- `routeRankIn` of every expert, in expert order: the eligibility of every expert is
computed once, then each rank walks the (index, key, eligible) rows once, so that a row of
E experts costs E² steps (`routeRankIn` one expert at a time recomputes each expert's
eligibility: E² · G). The same numbers: a `#guard` below checks it over small rows, and
Export.lean on every exported row of up to 16 experts. -/
def routeRanksIn (p : RouteParams α) (c : List α) (gsc : List α) : List Nat :=
  let rows := Lst.zip (indexed c) (eligibleMaskIn p (Lst.len c) gsc)
  Lst.map (fun (ei : Nat × α) => Lst.foldl (fun n (row : (Nat × α) × Bool) =>
      if row.2 && beatsAt row.1.2 row.1.1 ei.2 ei.1 then n + 1 else n) 0 rows) (indexed c)

/-- `routeKept` of every expert given every expert's eligibility `el` and rank `r`:
eligible and of rank below k. -/
def routeKeptMaskOf (k : Nat) (el : List Bool) (r : List Nat) : List Bool :=
  Lst.map (fun (er : Bool × Nat) => er.1 && decide (er.2 < k)) (Lst.zip el r)

/-- `routeKeptIn` of every expert, in expert order (from `eligibleMaskIn` and
`routeRanksIn`). -/
def routeKeptMaskIn (p : RouteParams α) (c : List α) (gsc : List α) : List Bool :=
  routeKeptMaskOf p.k (eligibleMaskIn p (Lst.len c) gsc) (routeRanksIn p c gsc)

/-- The kept experts given every expert's eligibility `el` and rank `r`, best first:
position r holds the eligible expert of rank r, for r < min k (number eligible). -/
def routeKeptExpertsOf (k : Nat) (el : List Bool) (r : List Nat) : List Nat :=
  let nEl := Lst.len (Lst.filter (fun b => b) el)
  -- (i, eligible i, routeRank i), walked once per position
  let rows := Lst.zip (Lst.range (Lst.len el)) (Lst.zip el r)
  Lst.filterMap (fun pos => match Lst.find? (fun (row : Nat × Bool × Nat) =>
      row.2.1 && row.2.2 == pos) rows with
    | some row => some row.1
    | none => none) (Lst.range (min k nEl))

/-- The kept experts, best first: position r holds the eligible expert of `routeRank` r,
for r < min k (number eligible). -/
def routeKeptExperts (p : RouteParams α) (c : List α) : List Nat :=
  let gsc := groupScores p.groupScore p.groups c
  routeKeptExpertsOf p.k (eligibleMaskIn p (Lst.len c) gsc) (routeRanksIn p c gsc)

/-- The dense gates (length E) given the scores `s` and the keys `c` (no exp, so it runs
over `Rat`): for e kept on `c`, `w_e = s_e` (the unbiased score), divided by
`total = sumSpec` of `s` over the kept experts in index order when renormalising, then
times the scale: `gate_e = (w_e [/ total]) * scale`. Other gates are zero, not scaled. -/
def routeGatesFromScores (p : RouteParams α) (s c : List α) : List α :=
  let idx := Lst.range (Lst.len s)
  let mask := Lst.map (routeKeptIn p c (groupScores p.groupScore p.groups c)) idx
  let total := sumSpec (Lst.map (score s) (Lst.filter (fun j => Lst.getD mask j false) idx))
  Lst.map (fun e => if Lst.getD mask e false then
      Context.mul (if p.renormalize then Context.div (score s e) total else score s e) p.scale
    else Context.zero) idx

/-- The gates from the logits with the exponential supplied: scores, keys, gates. -/
def routeGatesWith (expFn : α → α) (p : RouteParams α) (logits : List α) : List α :=
  let s := Activation.scoresSpecWith expFn p.score logits
  routeGatesFromScores p s (biasedKeys p.bias s)

/-- `routeGates p logits`: the family's gates. -/
def routeGates [ExpContext α] (p : RouteParams α) (logits : List α) : List α :=
  routeGatesWith ExpContext.exp p logits

/-- Mixtral's parameters in the family: softmax, no bias, one group, renormalised, scale 1
(`topkGroups` and `groupScore` are then irrelevant). -/
def mixtralParams (k : Nat) : RouteParams α :=
  { k := k, score := .softmax, bias := none, groups := 1, topkGroups := 1,
    groupScore := .max, renormalize := true, scale := Context.one }

/-- With one group, every expert is eligible and `routeKeptIn` is `kept` on the keys. -/
theorem routeKeptIn_one_group (p : RouteParams α) (hg : p.groups = 1) (c gsc : List α) :
    routeKeptIn p c gsc = kept p.k c := by
  funext e
  simp [routeKeptIn, routeRankIn, eligibleIn, kept, rank, hg]

/-- The family reduces to `gatesVecSpec` (docs/design.md §6): with softmax scores, no bias, one
group, renormalisation and scale 1, the gates are `gatesVecSpecWith`, for every
exponential, in every context where `x * 1 = x`. That holds over `Rat`, and in binary32 and
binary64 for every non-NaN x (a NaN stays a NaN, of any payload); Export.lean checks the
equality bit for bit on every exported case. `topkGroups` and `groupScore` are free: with
one group every expert is eligible. -/
theorem routeGatesWith_eq_gatesVecSpecWith (expFn : α → α) (p : RouteParams α)
    (logits : List α) (hs : p.score = .softmax) (hb : p.bias = none) (hg : p.groups = 1)
    (hr : p.renormalize = true) (hsc : p.scale = Context.one)
    (hone : ∀ x : α, Context.mul x Context.one = x) :
    routeGatesWith expFn p logits = gatesVecSpecWith expFn p.k logits := by
  simp only [routeGatesWith, routeGatesFromScores, Activation.scoresSpecWith, hs, biasedKeys,
    hb, routeKeptIn_one_group p hg, hr, hsc, hone, gatesVecSpecWith, gatesFromProbs,
    Activation.softmaxVecSpecWith, ↓reduceIte]

end Spec.MoE

namespace Spec.MoE

/-- `routeGates (mixtralParams k) = gatesVecSpec k` where `x * 1 = x` (in a section of its
own, so that `Context` comes from the `ExpContext` alone). -/
theorem routeGates_eq_gatesVecSpec {α : Type} [ExpContext α] (k : Nat) (logits : List α)
    (hone : ∀ x : α, Context.mul x Context.one = x) :
    routeGates (mixtralParams k) logits = gatesVecSpec k logits :=
  routeGatesWith_eq_gatesVecSpecWith ExpContext.exp (mixtralParams k) logits rfl rfl rfl rfl
    rfl hone

end Spec.MoE

/-! ## Checks of the seeds' concrete theorems, run by every regeneration -/

namespace Spec.MoE.Checks

open Spec.MoE

-- capacity_depends_on_devices
#guard capacityKeeps (switchCapacity 2 2) [0, 0] == [true, false]
#guard Lst.app (capacityKeeps (switchCapacity 2 1) [0]) (capacityKeeps (switchCapacity 2 1) [0])
    == [true, true]

-- balance_depends_on_devices
def balanceA : Nat × List Rat := (0, [3 / 4, 1 / 4])
def balanceB : Nat × List Rat := (1, [1 / 4, 3 / 4])
#guard switchBalance 2 [balanceA, balanceB] == 1
#guard switchBalance 2 [balanceA] == 3 / 2
#guard switchBalance 2 [balanceB] == 3 / 2

def bits32 (v : List Float32) : List Nat := Lst.map f32bits v

-- The binary32 example: logits 0 and 2⁻³⁰ (0x30800000) have the same binary32
-- probability, so routing on probabilities keeps expert 0 and on logits expert 1.
def tinyLogits : List Float32 := [Float32.ofBits 0, Float32.ofBits 0x30800000]
#guard keptExperts 1 tinyLogits == [1]
#guard keptExperts 1 (Activation.softmaxVecSpec tinyLogits) == [0]
#guard bits32 (Activation.softmaxVecSpec tinyLogits) == [0x3f000000, 0x3f000000]
#guard bits32 (gatesVecSpec 1 tinyLogits) == [0x3f800000, 0]
-- In binary64 the two probabilities differ, so both routings keep expert 1.
#guard keptExperts 1 (Activation.softmaxVecSpec (Lst.map f32toF64 tinyLogits)) == [1]

/-- Every vector of length `n` over `vals`. -/
def allVectors {β : Type} (vals : List β) : Nat → List (List β)
  | 0 => [[]]
  | n + 1 => Lst.flatMap (fun v => Lst.map (fun x => x :: v) vals) (allVectors vals n)

/-- card_kept, length_keptExperts, beats_of_kept, rank_lt and rank_injective at one
score vector and one k. -/
def routingFactsHold {β : Type} [Context β] (s : List β) (k : Nat) : Bool :=
  let E := Lst.len s
  let idx := Lst.range E
  let keptIdx := Lst.filter (kept k s) idx
  let r := ranks s
  Lst.len keptIdx == min k E &&
  Lst.len (keptExperts k s) == min k E &&
  Lst.all (kept k s) (keptExperts k s) &&
  Lst.all (fun i => Lst.all (fun i' => !(kept k s i && !kept k s i') || beats s i i') idx) idx &&
  Lst.all (fun i => Lst.all (fun j => i == j || Lst.getD r i 0 != Lst.getD r j 0) idx) idx &&
  Lst.all (fun i => decide (Lst.getD r i 0 < E)) idx

/-- Binary64 values with ties, signed zeros and infinities (NaN is outside the domain). -/
def floatValues : List Float :=
  [Float.ofBits 0xfff0000000000000, Float.ofBits 0x8000000000000000, Float.ofBits 0,
    Float.ofBits 0x3ff0000000000000, Float.ofBits 0x7ff0000000000000]

def ratValues : List Rat := [-1, 0, 1 / 3, 1]

def exhaustive {β : Type} [Context β] (vals : List β) : Bool :=
  Lst.all (fun E => Lst.all (fun s => Lst.all (routingFactsHold s) (Lst.range (E + 2)))
    (allVectors vals E)) (Lst.range 5)

-- Exhaustive over every score vector with E ≤ 4 and every k ≤ E + 1.
#guard exhaustive floatValues
#guard exhaustive ratValues

-- kept_congr: a strictly increasing map of the scores (x ↦ 3x - 1 on ℚ) keeps the same.
def monotoneImage (s : List Rat) : List Rat := Lst.map (fun x => ratSub (ratMul 3 x) 1) s
#guard Lst.all (fun E => Lst.all (fun s => Lst.all (fun k =>
    keptExperts k s == keptExperts k (monotoneImage s)) (Lst.range (E + 2)))
  (allVectors ratValues E)) (Lst.range 5)

-- +0 and -0 tie: the lower index wins either way round.
#guard keptExperts 1 [Float.ofBits 0x8000000000000000, Float.ofBits 0] == [0]
#guard keptExperts 1 [Float.ofBits 0, Float.ofBits 0x8000000000000000] == [0]

-- The checks can fail: a NaN score breaks StrictWeak and with it card_kept: with scores
-- [0, NaN, 1] expert 0 beats 1 (index), 1 beats 2 (index), 2 beats 0 (score), so every
-- rank is 1 and k = 1 keeps nobody.
#guard !routingFactsHold [Float.ofBits 0, Float.ofBits 0x7ff8000000000000,
  Float.ofBits 0x3ff0000000000000] 1
#guard ranks [Float.ofBits 0, Float.ofBits 0x7ff8000000000000,
  Float.ofBits 0x3ff0000000000000] == [1, 1, 1]
-- ... and keptExperts lists, for each position r < min k E, the first expert of rank r:
-- no expert has rank 0, so k = 2 gives only the first expert of rank 1 (the C++
-- keptExpertsLiteral must give the same, keptExpertsLiteralIsLeansOnNaNRows pins it).
#guard keptExperts 2 [Float.ofBits 0, Float.ofBits 0x7ff8000000000000,
  Float.ofBits 0x3ff0000000000000] == [0]

-- moe-gate-permute for the softmax alone holds with no condition over ℚ, for any
-- exponential: the max of a list and an exact sum do not depend on the order. Checked with
-- a rational stand-in for exp over every vector of length ≤ 3 and every relabelling.
def ratExpStandIn (x : Rat) : Rat := ratDiv 1 (ratAdd (ratSub 1 x) (ratDiv (ratMul x x) 2))
def permutations : Nat → List (List Nat)
  | 0 => [[]]
  | n + 1 => Lst.flatMap (fun p => Lst.map (fun i => Lst.app (Lst.take i p)
      (n :: Lst.drop i p)) (Lst.range (n + 1))) (permutations n)
def softmaxRelabels (s : List Rat) (e : List Nat) : Bool :=
  let sm := Activation.softmaxVecSpecWith ratExpStandIn
  let se := Lst.map (fun j => score s (Lst.getD e j 0)) (Lst.range (Lst.len s))
  Lst.all (fun i => ratEq (score (sm se) i) (score (sm s) (Lst.getD e i 0)))
    (Lst.range (Lst.len s))
#guard Lst.all (fun E => Lst.all (fun s => Lst.all (softmaxRelabels s) (permutations E))
  (allVectors ratValues E)) (Lst.range 4)

-- The routing family (docs/design.md §6), on rows worked out by hand (Export.lean exports them).
def famBase : RouteParams Rat := {
  k := 2, score := .sigmoid, bias := none, groups := 1, topkGroups := 1,
  groupScore := .max, renormalize := true, scale := 1 }
-- A bias that overturns the order selects on the keys [-1/8, 9/8, 1/2, 1/4] and gates on
-- the unbiased scores: 1/8 and 1/2 renormalised are 1/5 and 4/5.
def famOverturn : RouteParams Rat := { famBase with bias := some [-1, 1, 0, 0] }
#guard routeKeptExperts famOverturn (biasedKeys famOverturn.bias [7/8, 1/8, 1/2, 1/4]) == [1, 2]
#guard Lst.eqBy ratEq (routeGatesFromScores famOverturn [7/8, 1/8, 1/2, 1/4]
  (biasedKeys famOverturn.bias [7/8, 1/8, 1/2, 1/4])) [0, 1/5, 4/5, 0]
-- Group maxima 1/2, 1/2, 1/8, 1/2: groups 0 and 1 are kept (ties to the lower group), and
-- of experts 0..3 the two keyed 1/2 (0 and 3).
def famMaxTie : List Rat := [1/2, 1/4, 1/4, 1/2, 1/8, 1/8, 1/2, 0]
#guard keptGroups { famBase with groups := 4, topkGroups := 2 } famMaxTie == [0, 1]
#guard routeKeptExperts { famBase with groups := 4, topkGroups := 2 } famMaxTie == [0, 3]
-- Top-2 sums 1/2, 1/2, 1/2, 1/4 keep group 0; by max (3/8, 1/4, 1/2, 1/8) group 2.
def famTop2 : List Rat := [3/8, 1/8, 1/4, 1/4, 1/2, 0, 1/8, 1/8]
#guard groupScores .top2Sum 4 famTop2 == [1/2, 1/2, 1/2, 1/4]
#guard routeKeptExperts { famBase with groups := 4, groupScore := .top2Sum } famTop2 == [0, 1]
#guard routeKeptExperts { famBase with groups := 4 } famTop2 == [4, 5]
-- Groups of one, two kept: k = 3 keeps only the two eligible experts.
#guard routeKeptExperts { famBase with k := 3, groups := 4, topkGroups := 2 }
  [1/4, 3/4, 1/2, 1/8] == [1, 2]
-- sigmoid 0 = 1/2 in every context.
#guard ratEq (Activation.sigmoidSpecWith ratExpStandIn 0) (1/2)
#guard f32bits (Activation.sigmoidSpec (Float32.ofBits 0)) == 0x3f000000
-- routeGatesWith_eq_gatesVecSpecWith from the scores, over every rational vector of length
-- ≤ 3 over {-1, 0, 1/3, 1} and every k ≤ E + 1; with one group routeKeptExperts is
-- keptExperts.
#guard Lst.all (fun E => Lst.all (fun s => Lst.all (fun k =>
    Lst.eqBy ratEq (routeGatesFromScores (mixtralParams k) s s) (gatesFromProbs k s) &&
    routeKeptExperts (mixtralParams k) s == keptExperts k s) (Lst.range (E + 2)))
  (allVectors ratValues E)) (Lst.range 4)

-- rank counts the experts j with `beats s j i` (it walks the scores once instead of reading
-- each `score s j`): the same number, over every vector of length ≤ 4 above.
#guard Lst.all (fun E => Lst.all (fun s => Lst.all (fun i =>
    rank s i == Lst.len (Lst.filter (fun j => beats s j i) (Lst.range E))) (Lst.range E))
  (allVectors floatValues E)) (Lst.range 5)

-- The all-at-once forms are the pointwise definitions, and groupKeys are groupMembers'
-- keys: over every row of length ≤ 4 of {-0, 0, 1, NaN}, one to four groups by max and by
-- top-2 sum, every topkGroups and k = 1, 2.
def nanValues : List Float := [Float.ofBits 0x8000000000000000, Float.ofBits 0,
  Float.ofBits 0x3ff0000000000000, Float.ofBits 0x7ff8000000000000]
def allAtOnceIsPointwise (p : RouteParams Float) (c : List Float) : Bool :=
  let E := Lst.len c
  let gsc := groupScores p.groupScore p.groups c
  let idx := Lst.range E
  Lst.eqBy Lst.eqBool (eligibleMaskIn p E gsc) (Lst.map (eligibleIn p E gsc) idx) &&
  routeRanksIn p c gsc == Lst.map (routeRankIn p c gsc) idx &&
  Lst.eqBy Lst.eqBool (routeKeptMaskIn p c gsc) (Lst.map (routeKeptIn p c gsc) idx) &&
  Lst.all (fun g => Lst.eqBy (fun x y => f64bits x == f64bits y) (groupKeys c p.groups g)
    (Lst.map (score c) (groupMembers E p.groups g))) (Lst.range p.groups)
def guardParams (k G t : Nat) (gs : GroupScore) : RouteParams Float :=
  { k := k, score := .sigmoid, bias := none, groups := G, topkGroups := t, groupScore := gs,
    renormalize := true, scale := f64one }
#guard Lst.all (fun E => Lst.all (fun c => Lst.all (fun G => Lst.all (fun t => Lst.all
    (fun k => Lst.all (fun gs => allAtOnceIsPointwise (guardParams k G t gs) c)
      [GroupScore.max, GroupScore.top2Sum]) [1, 2]) (Lst.rangeFrom 1 G))
    (Lst.filter (fun G => E % G == 0) (Lst.rangeFrom 1 4)))
  (allVectors nanValues E)) (Lst.range 5)

/-! ### The sign of a zero group score: three readings, two of them told apart

A group score's sign changes no kept set (+0 and -0 tie), but the vectors export it bit
for bit, so a kernel or a transliteration that reads the definitions otherwise is seen. -/

def pz : Float32 := Float32.ofBits 0
def nz : Float32 := Float32.ofBits 0x80000000
-- groupMax is a left fold of maxOfLe (`if x ≤ y then y else x`): of two equal keys it keeps
-- the later one. [+0, -0] scores -0 and [-0, +0] scores +0 (keeping the first would swap
-- them).
#guard f32bits (groupMax [pz, nz] 1 0) == 0x80000000
#guard f32bits (groupMax [nz, pz] 1 0) == 0
-- groupTop2Sum adds from zero, `(0 + c_best) + c_second`: two -0 keys score +0, where
-- `c_best + c_second` without the leading `0 +` would give -0.
#guard f32bits (groupTop2Sum [nz, nz] 1 0) == 0
#guard f32bits (Context.add nz nz) == 0x80000000
-- Adding the second key first, `(0 + c_second) + c_best`, is the same function in IEEE
-- arithmetic (round to nearest): x + y = y + x bit for bit, and 0 + x is x except that it
-- turns -0 into +0, so both orders give a + b for nonzero keys and +0 when both are zeros.
-- Checked over every pair of the binary32 values below (NaN matches NaN): no vector can tell
-- this reading apart, so it is not one of the mutations the replays must kill.
@[noinline] def f32ofNat (n : Nat) : Float32 := Float32.ofBits n.toUInt32
def signedEdges32 : List Float32 :=
  Lst.map f32ofNat [0, 0x80000000, 1, 0x80000001, 0x3f800000, 0xbf800000, 0x7f7fffff,
    0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0x00800000, 0x80800000]
def sameBits32 (x y : Float32) : Bool := f32bits x == f32bits y || (f32isNaN x && f32isNaN y)
#guard Lst.all (fun a => Lst.all (fun b =>
    sameBits32 (f32add (f32add f32zero a) b) (f32add (f32add f32zero b) a))
  signedEdges32) signedEdges32

/-! Dispatch: hand-worked layouts, and over every slot list of length ≤ 4 over {empty, 0, 1, 2}
with E = 3, every capacity (none, 0, 1, 2) and blocks 1 to 3: the counted form equals
`dispatchKept`; each expert keeps its first C non-empty slots (capacityKeeps read per
expert); a kept slot appears exactly once in the layout and a dropped or empty one never,
every other entry being the padding value; each block holds only its expert's slots. -/

def eqNats (a b : List Nat) : Bool := Lst.eqBy Lst.eqNat a b
def eqSlots (a b : List (Nat × Nat)) : Bool :=
  Lst.eqBy (fun (x y : Nat × Nat) => x.1 == y.1 && x.2 == y.2) a b

-- T = 3 tokens, k = 2: slot 1 empty; expert 1 has slots 0, 3, 4, expert 0 slots 2, 5.
def handIds : List (Option Nat) := [some 1, none, some 0, some 1, some 1, some 0]
#guard eqNats (dispatchSpec 3 2 none handIds).sortedSlots [2, 5, 0, 3, 4, 6]
#guard eqNats (dispatchSpec 3 2 none handIds).blockExpert [0, 1, 1]
#guard dispatchRows 3 2 none handIds == 6
#guard eqNats (dispatchSpec 3 2 (some 2) handIds).sortedSlots [2, 5, 0, 3]
#guard eqNats (dispatchSpec 3 2 (some 2) handIds).blockExpert [0, 1]
#guard eqNats (dispatchSpec 3 2 (some 1) handIds).sortedSlots [2, 6, 0, 6]
#guard eqNats (dispatchSpec 3 2 (some 0) handIds).sortedSlots []
#guard eqNats (dispatchSpec 3 2 (some 0) handIds).blockExpert []
#guard eqNats (dispatchSpec 3 1 none handIds).sortedSlots [2, 5, 0, 3, 4]
#guard eqNats (dispatchSpec 3 1 none handIds).blockExpert [0, 0, 1, 1, 1]
#guard eqNats (dispatchSpec 3 4 none handIds).sortedSlots [2, 5, 6, 6, 0, 3, 4, 6]
#guard eqNats (dispatchSpec 3 4 none handIds).blockExpert [0, 1]
#guard eqSlots (dispatchKept (some 2) handIds) [(0, 1), (2, 0), (3, 1), (5, 0)]
/-- String lists equal, by direct recursion (a closure over `String`'s `==` has no
executable code in the interpreter: `String.decEq._boxed`). -/
def eqStrs : List String → List String → Bool
  | [], [] => true
  | x :: xs, y :: ys => x == y && eqStrs xs ys
  | _, _ => false
#guard eqStrs (dispatchBrokenRules 3 0 [some 3, none]) ["blockPositive", "idsInRange"]
#guard eqStrs (dispatchBrokenRules 3 2 handIds) []
#guard eqStrs (dispatchBrokenRules 1 2 handIds) ["idsInRange"]
#guard padTo 4 0 == 0 && padTo 4 1 == 4 && padTo 4 4 == 4 && padTo 4 5 == 8 && padTo 1 7 == 7

def idAlphabet : List (Option Nat) := [none, some 0, some 1, some 2]
def idListsOfLength : Nat → List (List (Option Nat))
  | 0 => [[]]
  | n + 1 => Lst.flatMap (fun (rest : List (Option Nat)) =>
      Lst.map (fun (o : Option Nat) => o :: rest) idAlphabet) (idListsOfLength n)
def smallIdLists : List (List (Option Nat)) := Lst.flatMap idListsOfLength (Lst.range 5)
def smallCapacities : List (Option Nat) := [none, some 0, some 1, some 2]

def countOf (x : Nat) (xs : List Nat) : Nat := Lst.len (Lst.filter (fun y => y == x) xs)
def isKept (kept : List (Nat × Nat)) (s : Nat) : Bool :=
  Lst.any (fun (se : Nat × Nat) => se.1 == s) kept
def slotExpert (ids : List (Option Nat)) (s : Nat) : Option Nat := Lst.getD ids s none

def dispatchFactsHold (E block : Nat) (C : Option Nat) (ids : List (Option Nat)) : Bool :=
  let n := Lst.len ids
  let kept := dispatchKept C ids
  let d := dispatchSpec E block C ids
  let rows := Lst.len d.sortedSlots
  let firstC := Lst.all (fun e => eqNats (expertSlots kept e) (match C with
      | none => expertSlots (dispatchSlots ids) e
      | some c => Lst.take c (expertSlots (dispatchSlots ids) e))) (Lst.range E)
  let once := Lst.all (fun s => countOf s d.sortedSlots == (if isKept kept s then 1 else 0))
    (Lst.range n)
  let padOnly := Lst.all (fun x => decide (x ≤ n)) d.sortedSlots
  let blocks := rows % block == 0 && Lst.len d.blockExpert * block == rows &&
    Lst.all (fun r => let x := Lst.getD d.sortedSlots r n
      x == n || slotExpert ids x == some (Lst.getD d.blockExpert (r / block) E)) (Lst.range rows)
  eqSlots (dispatchKeptCounted E C ids) kept && firstC && once && padOnly && blocks

#guard Lst.all (fun (ids : List (Option Nat)) => Lst.all (fun (C : Option Nat) =>
    Lst.all (fun block => dispatchFactsHold 3 block C ids) [1, 2, 3]) smallCapacities)
  smallIdLists

-- SwiGLU over exact rationals with the stand-in exp `y ↦ y²` (not symmetric in W1 and W3):
-- silu 2 = 2 / (1 + (0 - 2)²) = 2/5; x = [1, 2] gives W1 x = 5, W3 x = 3, hidden
-- silu 5 * 3 = 5/26 * 3 = 15/26 (swapping W1 and W3 would give silu 3 * 5 = 3/2), and
-- W2 = [[2], [1]] gives [15/13, 15/26]; silu 0 = 0.
def squareExp (y : Rat) : Rat := ratMul y y
#guard ratEq (siluWith squareExp 2) (2/5)
#guard ratEq (siluWith squareExp 0) 0
#guard Lst.eqBy ratEq (swigluExpertWith squareExp [[1, 2]] [[3, 0]] [[2], [1]] [1, 2])
  [15/13, 15/26]
-- Two hidden units, W2 mixing them: hidden [silu 1 * 1, silu (-1) * (-2)] =
-- [1/2 * 1, -1/2 * -2] = [1/2, 1], so W2 = [[1, 1], [2, -1]] gives [3/2, 0].
#guard Lst.eqBy ratEq (swigluExpertWith squareExp [[1, 0], [0, 1]] [[1, 0], [0, 2]]
  [[1, 1], [2, -1]] [1, -1]) [3/2, 0]
-- An expert with no hidden units outputs zeros; binary32 silu 0 is +0.
#guard Lst.eqBy ratEq (swigluExpertWith squareExp [] [] [[], []] [1, 2]) [0, 0]
#guard f32bits (silu (Float32.ofBits 0)) == 0

end Spec.MoE.Checks
