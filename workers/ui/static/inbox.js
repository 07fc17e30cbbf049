// The inbox works without script; this only adds "select every wait on this page".
document.addEventListener("DOMContentLoaded", () => {
  const all = document.getElementById("select-all");
  if (!all) return;
  const boxes = () => document.querySelectorAll("input.select");
  all.addEventListener("change", () => boxes().forEach((box) => { box.checked = all.checked; }));
});
