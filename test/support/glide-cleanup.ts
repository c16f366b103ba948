/** Runs after each spec file: no GLIDE client outlives the spec that opened it. */
import { closeGlideClients } from './glide-clients.js';

afterAll(() => closeGlideClients());
